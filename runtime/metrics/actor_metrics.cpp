// Why the mailboxes are sampled, not all probed: each probe is a request with a timeout of its
// own, answered with the actor's whole ActorProbe, and probing every actor cost more per actor the
// more there were. Measured on a release build on a 2-core virtual machine, the scheduler holding
// live workflows of 4 waiting tasks each, 20 scrapes one after the other: probing every actor cost
// the node 30 ms of CPU per scrape at 5,000 actors, 296 ms at 25,000 and 971 ms at 50,000 (10,000
// workflows), against at most 1 ms for the scrape without the probe; probing at most 1,000 of each
// kind cost 8.5 ms, 15.5 ms and 22.5 ms. The first grows with the load past what a scrape (every
// 15 s, say) should take from the scheduler; the second stays bounded. The sample is drawn anew
// each scrape: a backlog many actors share shows at once, and one actor's lasting backlog, among
// N of its kind, in one scrape out of N / 1,000 on average. The cap is per kind, so the few system
// actors (the dispatcher, the directory, one per task list and per worker) are all probed.
#include "runtime/metrics/actor_metrics.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/system/prober.hpp"

namespace troupe::runtime {
namespace {

/// A different sample each scrape, so that over scrapes every actor is seen.
uint64_t fresh_seed() {
  static std::atomic<uint64_t> scrapes{0};
  return std::random_device{}() ^ (scrapes.fetch_add(1, std::memory_order_relaxed) << 32);
}

std::vector<actors::ProbedActor> probe(caf::actor_system& system, std::vector<actors::ActorRoster::Entry> entries,
                                       const MailboxProbeOptions& options) {
  // Shared with the prober: if the scrape stops waiting, the answers come to a promise no one
  // reads, not to this frame.
  auto answers = std::make_shared<std::promise<std::vector<actors::ProbedActor>>>();
  auto handed = answers->get_future();
  actors::probe_actors(system, std::move(entries), options.deadline,
                       [answers](std::vector<actors::ProbedActor> probed) { answers->set_value(std::move(probed)); });
  if (handed.wait_for(options.deadline + options.hand_over) != std::future_status::ready) {
    throw std::runtime_error("the probe of the actors' mailboxes did not end in time");
  }
  return handed.get();
}

}  // namespace

void count_actors(metrics::Scrape& scrape, const actors::ActorRoster& roster) {
  auto counts = roster.counts();
  for (const auto& kind : actors::actor_kinds()) counts.try_emplace(kind, 0);
  for (const auto& [kind, live] : counts) {
    scrape.gauge("troupe_actors", "Live actors in the scheduler, by kind (as troupe shell's `actors` counts them).",
                 static_cast<double>(live), {{"kind", kind}});
  }
}

void largest_mailboxes(metrics::Scrape& scrape, caf::actor_system& system, const actors::ActorRoster& roster,
                       const MailboxProbeOptions& options) {
  const auto probed = probe(system, roster.sample(options.per_kind, fresh_seed()), options);

  // Every known kind starts at 0 (no live actor, no backlog); a kind none of whose probed actors
  // answered is taken out again: its largest mailbox is not known.
  std::map<std::string, uint64_t> largest;
  for (const auto& kind : actors::actor_kinds()) largest[kind] = 0;
  std::map<std::string, size_t> asked, silent;
  size_t answered = 0;
  for (const auto& a : probed) {
    ++asked[a.entry.kind];
    if (!a.probe) {
      ++silent[a.entry.kind];
      continue;
    }
    ++answered;
    largest[a.entry.kind] = std::max(largest[a.entry.kind], a.probe->mailbox);
  }
  if (!probed.empty() && answered == 0) throw std::runtime_error("no actor answered the probe of its mailbox");
  for (const auto& [kind, n] : asked) {
    if (silent[kind] == n) largest.erase(kind);
  }
  const std::string help = "The largest mailbox (messages waiting) among the scheduler's live actors of a kind, "
                           "probed at the scrape: at most " + std::to_string(options.per_kind) +
                           " of each kind, a random sample of a kind that has more.";
  for (const auto& [kind, depth] : largest) {
    scrape.gauge("troupe_actor_mailbox_largest", help, static_cast<double>(depth), {{"kind", kind}});
  }
}

}  // namespace troupe::runtime
