// The scheduler's live actors as metrics: how many of each kind the roster lists, and the
// largest mailbox of each kind, probed at the scrape (actors/system/prober.hpp). Kept apart from
// node_metrics.cpp, which adds them to the registry, so that tests run them on actors of their own.
#pragma once

#include <chrono>
#include <cstddef>

#include <caf/fwd.hpp>

#include "actors/system/actor_roster.hpp"
#include "runtime/metrics/registry.hpp"

namespace troupe::runtime {

/// `troupe_actors{kind}`: the roster's live actors of each kind, every known kind written (0
/// included) so that a series does not vanish while no actor has it.
void count_actors(metrics::Scrape& scrape, const actors::ActorRoster& roster);

struct MailboxProbeOptions {
  /// How long an actor has to answer; one that does not is left out of its kind's largest.
  std::chrono::milliseconds deadline{2000};
  /// How long beyond `deadline` the scrape waits for the answers to be handed over (by an actor
  /// of the node, which may be busy): deadline + hand_over is the most a scrape waits.
  std::chrono::milliseconds hand_over{500};
  /// At most this many actors of each kind are probed at a scrape, a random sample of a kind
  /// that has more (actor_metrics.cpp says why).
  size_t per_kind = 1000;
};

/// `troupe_actor_mailbox_largest{kind}`: the largest mailbox among the probed live actors of each
/// kind (0 for a kind with no live actor; a kind none of whose actors answered is left out).
/// Throws when no actor answered at all, or the answers were not handed over in deadline +
/// hand_over: the registry counts it in `troupe_metrics_collector_failures`.
void largest_mailboxes(metrics::Scrape& scrape, caf::actor_system& system, const actors::ActorRoster& roster,
                       const MailboxProbeOptions& options = {});

}  // namespace troupe::runtime
