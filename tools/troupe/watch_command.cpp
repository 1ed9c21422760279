// `troupe watch`: a workflow's history as it is recorded, drawn as a live task table on a
// terminal, or one line (or JSON object) per event elsewhere.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
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
#include "tools/troupe/watch_screen.hpp"
#include "schema/duration.hpp"

namespace troupe::cli {

namespace {

/// The terminal a live watch draws on: the alternate screen while it runs, so redraws leave
/// nothing in the scrollback, and the normal screen back when it ends, even on Ctrl-C.
class LiveScreen {
 public:
  LiveScreen() {
    write_all(enter);
    struct sigaction action {};
    action.sa_handler = &LiveScreen::on_signal;
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
  }
  ~LiveScreen() { write_all(leave); }
  LiveScreen(const LiveScreen&) = delete;
  LiveScreen& operator=(const LiveScreen&) = delete;

  /// Draws `lines` from the top left, each cleared to its end, and clears what is below.
  void draw(const std::vector<std::string>& lines) {
    std::string out = "\x1b[H";
    for (const auto& line : lines) out += line + "\x1b[K\r\n";
    out += "\x1b[J";
    write_all(out);
  }

  /// The terminal's size now (it may change while the watch runs).
  static ScreenSize size() {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return {};
    return {ws.ws_row, ws.ws_col};
  }

 private:
  static constexpr const char* enter = "\x1b[?1049h\x1b[?25l";  // alternate screen, no cursor
  static constexpr const char* leave = "\x1b[?25h\x1b[?1049l";

  static void write_all(std::string_view text) {
    while (!text.empty()) {
      const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
      if (n <= 0) return;
      text.remove_prefix(static_cast<size_t>(n));
    }
  }
  static void on_signal(int signal) {
    // Async-signal-safe: a write, then the signal's own default action.
    [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, leave, std::strlen(leave));
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
};

int64_t now_us() { return wall_clock_us(); }

}  // namespace

int watch_command(const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto from = args.number("from", 1);
  if (!from || *from < 1) return usage_error(args, "--from takes a sequence number, at least 1");
  auto client = connect(args);
  if (!client) return failed(client.error());
  const std::string& id = words[0];

  // On a terminal, the table is the history folded event by event by the same replay the
  // scheduler runs, drawn once per batch the scheduler sends (what it had recorded by then), so
  // a frame never shows a state the workflow has already left; the first frame comes with the
  // first batch, which holds everything recorded before the watch began. Elsewhere (a pipe, a
  // log) each event is a line instead. The live table needs the history from its start.
  const bool live = !*json && ::isatty(STDOUT_FILENO) && *from <= 1;
  actors::ReplayedWorkflow replayed;
  replayed.workflow.id = id;
  bool replay_ok = true;
  std::unique_ptr<LiveScreen> screen;
  if (live) screen = std::make_unique<LiveScreen>();
  auto draw = [&] {
    if (screen && replay_ok) screen->draw(watch_frame(actors::snapshot(replayed), LiveScreen::size(), now_us()));
  };
  auto watched = (*client)->watch(
      id, static_cast<uint64_t>(*from),
      [&](const client::WatchedEvent& e) {
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
        if (replay_ok && *from <= 1) replay_ok = bool(actors::apply(replayed, storage::StoredEvent{e.sequence, e.packed}));
        return true;
      },
      draw);
  screen.reset();  // back to the normal screen
  if (!watched) return failed(watched.error());
  // How it ended, from the history watched (from the start) or, when it began later, asked.
  std::string state;
  if (*from <= 1 && replay_ok) {
    const auto status = actors::snapshot(replayed);
    state = status.state;
    // The last frame stays on the normal screen, whole, as `troupe status` prints it.
    if (live) std::cout << render_task_table(status) << std::flush;
  } else if (auto status = (*client)->describe(id)) {
    state = status->state;
  }
  return state == "SUCCESS" ? exit_ok : exit_failed;
}

}  // namespace troupe::cli
