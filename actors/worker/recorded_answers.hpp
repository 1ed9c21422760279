// Answers to operators' orders (drain, undrain, forgive) that wait until the worker record the
// order changed is durable: a drain acknowledged and then lost with a crash would be a drain
// the operator believes in and the restarted scheduler does not.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/caf_types.hpp"
#include "actors/worker/worker_view.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

class RecordedAnswers {
 public:
  /// A ticket for the next answer, and the store callback for its write, which tells `actor`
  /// (persisted_atom, ticket, why it failed or none); the actor then calls recorded().
  template <class Actor>
  std::pair<uint64_t, storage::DoneCallback> next(Actor actor) {
    const uint64_t ticket = ++last_;
    return {ticket, [actor, ticket](Result<void> done) {
              caf::anon_send(actor, persisted_atom::value, ticket, done ? caf::error{} : to_caf(done.error()));
            }};
  }

  /// `view` answers `promise` once the write of `ticket` is durable.
  void hold(uint64_t ticket, caf::typed_response_promise<WorkerView> promise, WorkerView view) {
    waiting_.emplace(ticket, std::make_pair(std::move(promise), std::move(view)));
  }

  /// No answer waits.
  bool empty() const { return waiting_.empty(); }

  /// The write of `ticket` is over: its answer goes out, or why the order may not outlive a
  /// restart.
  void recorded(uint64_t ticket, const caf::error& failed) {
    auto it = waiting_.find(ticket);
    if (it == waiting_.end()) return;
    auto& [promise, view] = it->second;
    if (!failed) {
      promise.deliver(std::move(view));
    } else {
      promise.deliver(to_caf(Error{Errc::UNAVAILABLE, "the order took effect but the worker's record could not be "
                                                      "written, so a scheduler restart would forget it: " +
                                                      from_caf(failed).message}));
    }
    waiting_.erase(it);
  }

 private:
  uint64_t last_ = 0;
  std::map<uint64_t, std::pair<caf::typed_response_promise<WorkerView>, WorkerView>> waiting_;
};

}  // namespace troupe::actors
