// `troupe watch`: a workflow's history as it is recorded, drawn as a live task table on a
// terminal, or one line (or JSON object) per event elsewhere.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "actors/system/replay.hpp"
#include "runtime/client/gateway_client.hpp"
#include "tools/troupe/client_commands.hpp"
#include "tools/troupe/connection.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/json.hpp"
#include "tools/troupe/task_table.hpp"

namespace troupe::cli {

int watch_command(const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto from = args.number("from", 1);
  if (!from || *from < 1) return usage_error(args, "--from takes a sequence number, at least 1");
  auto client = connect(args);
  if (!client) return failed(client.error());
  const std::string& id = words[0];

  // The table is the history folded by the same replay the scheduler runs, redrawn in place on
  // a terminal at most every 100 ms; elsewhere (a pipe, a log) each event is a line instead.
  const bool live = !*json && ::isatty(STDOUT_FILENO);
  std::vector<storage::StoredEvent> history;
  size_t drawn_lines = 0;
  auto last_draw = std::chrono::steady_clock::time_point();
  auto draw = [&] {
    auto replayed = actors::replay(id, history);
    if (!replayed) return;
    std::string table = render_task_table(actors::snapshot(*replayed));
    if (drawn_lines > 0) std::cout << "\x1b[" << drawn_lines << "A\x1b[J";
    std::cout << table << std::flush;
    drawn_lines = static_cast<size_t>(std::count(table.begin(), table.end(), '\n'));
    last_draw = std::chrono::steady_clock::now();
  };
  auto watched = (*client)->watch(id, static_cast<uint64_t>(*from), [&](const client::WatchedEvent& e) {
    if (*json) {
      Json out = Json::object();
      out.set("sequence", static_cast<int64_t>(e.sequence));
      out.set("timestampUs", e.timestamp_us);
      out.set("actorKind", e.actor_kind);
      out.set("actorId", e.actor_id);
      out.set("attempt", static_cast<int64_t>(e.attempt));
      out.set("kind", e.kind);
      out.set("detail", e.detail);
      std::cout << out.dump() << "\n" << std::flush;
    } else if (!live) {
      // A line per event: long fields (a submitted definition) are cut; --json has them whole.
      std::string detail = e.detail.size() > 160 ? e.detail.substr(0, 157) + "..." : e.detail;
      std::replace(detail.begin(), detail.end(), '\n', ' ');
      std::cout << e.sequence << " " << utc_time(e.timestamp_us) << " " << e.actor_kind << " " << e.actor_id
                << (e.attempt ? "#" + std::to_string(e.attempt) : "") << " " << e.kind
                << (detail.empty() ? "" : " " + detail) << "\n"
                << std::flush;
    }
    history.push_back(storage::StoredEvent{e.sequence, e.packed});
    if (live && std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(100)) draw();
    return true;
  });
  if (live) draw();
  if (!watched) return failed(watched.error());
  // How it ended, from the history watched (from the start) or, when it began later, asked.
  std::string state;
  if (*from <= 1) {
    if (auto replayed = actors::replay(id, history)) state = actors::snapshot(*replayed).state;
  } else if (auto status = (*client)->describe(id)) {
    state = status->state;
  }
  return state == "SUCCESS" ? exit_ok : exit_failed;
}

}  // namespace troupe::cli
