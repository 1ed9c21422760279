// taskLogs: a task attempt's log, read from its worker and pushed to the client's sink.
#include "runtime/task_log_stream.hpp"

#include <algorithm>
#include <vector>

#include "runtime/logs/task_runs.hpp"
#include "runtime/wire.hpp"
#include "schema/suggest.hpp"
#include "storage/codec.hpp"

namespace troupe::runtime {
namespace {

/// The bytes one read asks a worker for: large enough that a log written fast is drained in few
/// round trips, small enough to keep one message modest.
constexpr uint32_t chunk_bytes = 256 * 1024;
/// A followed log is looked at again this soon after it grew, and up to max_poll after it stayed
/// quiet (doubling), so an idle task costs a read a second and a chatty one is shown promptly.
constexpr kj::Duration min_poll = 100 * kj::MILLISECONDS;
constexpr kj::Duration max_poll = 1000 * kj::MILLISECONDS;
/// How often a follow looks for the start of a task that has not started yet.
constexpr kj::Duration start_poll = 500 * kj::MILLISECONDS;

bool workflow_open(const WorkflowStatus& status) {
  switch (status.state_code) {
    case WorkflowStateCode::SUCCESS:
    case WorkflowStateCode::FAILED:
    case WorkflowStateCode::STOPPED: return false;
    default: return true;
  }
}

/// Whether a task in `code` will not start another attempt in this run.
bool task_over(TaskStateCode code) {
  switch (code) {
    case TaskStateCode::SUCCESS:
    case TaskStateCode::FORCED_SUCCESS:
    case TaskStateCode::FAILURE:
    case TaskStateCode::KILLED:
    case TaskStateCode::UPSTREAM_FAILED:
    case TaskStateCode::NEVER_ATTEMPTED: return true;
    default: return false;
  }
}

class TaskLogStream {
 public:
  TaskLogStream(TaskLogPorts ports, TaskLogRequest request, schema::LogSink::Client sink, kj::Timer& timer)
      : ports_(std::move(ports)), request_(std::move(request)), sink_(kj::mv(sink)), timer_(timer) {}

  kj::Promise<Result<void>> run() {
    return refresh().then([this](Result<void> refreshed) -> kj::Promise<Result<void>> {
      if (!refreshed) return refreshed;
      if (request_.task.empty()) {
        for (const auto& task : status_.tasks) tasks_.push_back(task.name);
      } else if (auto known = check_task(); !known) {
        return known;
      } else {
        tasks_.push_back(request_.task);
      }
      return next_task();
    });
  }

 private:
  /// Reads what is new: the workflow's state (describe), then its history since the last read.
  kj::Promise<Result<void>> refresh() {
    return ports_.describe(request_.workflow_id).then([this](Result<WorkflowStatus> status) -> Result<void> {
      if (!status) return status.error();
      status_ = std::move(*status);
      return read_history();
    });
  }

  Result<void> read_history() {
    while (true) {
      auto page = ports_.store->read(request_.workflow_id, next_sequence_, 512);
      if (!page) return page.error();
      if (page->empty()) return ok();
      for (const auto& stored : *page) {
        auto decoded = storage::DecodedEvent::decode(stored.packed);
        if (!decoded) return decoded.error();
        if (auto added = runs_.add(decoded->get()); !added) return added.error();
      }
      next_sequence_ = page->back().sequence + 1;
    }
  }

  Result<void> check_task() const {
    std::vector<std::string> names;
    for (const auto& task : status_.tasks) {
      if (task.name == request_.task) return ok();
      names.push_back(task.name);
    }
    auto near = near_miss(request_.task, names);
    return fail(Errc::INVALID_ARGUMENT, "workflow '" + request_.workflow_id + "' has no task '" + request_.task + "'" +
                                            (near ? " (did you mean '" + *near + "'?)" : ""));
  }

  const TaskStatus* status_of(const std::string& task) const {
    for (const auto& t : status_.tasks) {
      if (t.name == task) return &t;
    }
    return nullptr;
  }

  /// Whether `task` may still start an attempt: its workflow is open and it is not over.
  bool may_start(const std::string& task) const {
    const TaskStatus* status = status_of(task);
    return workflow_open(status_) && status != nullptr && !task_over(status->state_code);
  }

  /// The next task's log; done after the last.
  kj::Promise<Result<void>> next_task() {
    if (task_index_ >= tasks_.size()) return Result<void>(ok());
    const std::string& task = tasks_[task_index_];
    const bool named = !request_.task.empty();
    if (runs_.runs_handler(task)) {
      if (!named) return skip_task();
      return Result<void>(fail(Errc::NOT_ALLOWED_IN_STATE,
                               "task '" + task + "' runs a handler, inside its worker, which writes no log: its "
                               "result and its failures are in 'troupe status " + request_.workflow_id + "'"));
    }
    const uint32_t last = runs_.last_attempt(task);
    const uint32_t attempt = request_.attempt != 0 ? request_.attempt : last;
    if (last == 0 || attempt > last) {
      // Not started (that attempt) yet: a follow waits while it may still start.
      if (request_.follow && may_start(task)) return wait_for_start();
      if (!named) return skip_task();
      if (last == 0) return Result<void>(not_started(task));
      return Result<void>(fail(Errc::INVALID_ARGUMENT, "task '" + task + "' has run " +
                                                           (last == 1 ? "attempt 1 only" : "attempts 1 to " + std::to_string(last)) +
                                                           ": it has no attempt " + std::to_string(attempt)));
    }
    attempt_ = attempt;
    pieces_ = runs_.runs_of_attempt(task, attempt);
    piece_index_ = 0;
    if (pieces_.empty()) {
      if (!named) return skip_task();
      return Result<void>(fail(Errc::NOT_FOUND, "attempt " + std::to_string(attempt) + " of task '" + task +
                                                    "' never ran on a worker, so it has no log"));
    }
    return next_piece();
  }

  kj::Promise<Result<void>> skip_task() {
    ++task_index_;
    return next_task();
  }

  kj::Promise<Result<void>> wait_for_start() {
    return timer_.afterDelay(start_poll).then([this] { return refresh(); }).then([this](Result<void> refreshed) {
      if (!refreshed) return kj::Promise<Result<void>>(refreshed);
      return next_task();
    });
  }

  Error not_started(const std::string& task) const {
    const TaskStatus* status = status_of(task);
    std::string state = status != nullptr ? status->state : "unknown";
    if (status != nullptr && !status->wait_reason.empty()) state += ": " + status->wait_reason;
    return fail(Errc::NOT_ALLOWED_IN_STATE,
                "task '" + task + "' has not started (" + state + "), so it has no log yet" +
                    (may_start(task) ? "; --follow waits for it to start" : ""));
  }

  /// The log of the next invocation of the attempt; the next task's after the last.
  kj::Promise<Result<void>> next_piece() {
    if (piece_index_ >= pieces_.size()) return skip_task();
    offset_ = 0;
    first_ = true;
    poll_ = min_poll;
    return read_piece();
  }

  kj::Promise<Result<void>> skip_piece() {
    ++piece_index_;
    return next_piece();
  }

  /// The current piece is over. Following the last run known of an attempt that is not over,
  /// the attempt may go on elsewhere (a lost or drained worker's attempt runs again under the
  /// same attempt): its next run is waited for, and followed. Otherwise the next piece.
  kj::Promise<Result<void>> piece_done() {
    if (!request_.follow || piece_index_ + 1 < pieces_.size()) return skip_piece();
    return follow_attempt(/*unread=*/false);
  }

  /// Following: waits, re-reading the history, until the attempt runs again (its next piece
  /// is followed) or is over. Meanwhile the current piece is read again if it may have more
  /// (`unread`: its worker went away before its end was read; or it has not ended).
  kj::Promise<Result<void>> follow_attempt(bool unread) {
    return refresh().then([this, unread](Result<void> refreshed) -> kj::Promise<Result<void>> {
      if (!refreshed) return refreshed;
      const std::string& task = tasks_[task_index_];
      auto pieces = runs_.runs_of_attempt(task, attempt_);
      const bool runs_again = pieces.size() > pieces_.size();
      pieces_ = std::move(pieces);  // the history only grows: the known runs come first, newer
      if (runs_again) return skip_piece();
      if (!attempt_may_go_on(task)) return unread ? not_connected() : skip_piece();
      return timer_.afterDelay(start_poll).then([this, unread] {
        return unread || !piece().ended ? read_piece() : follow_attempt(false);
      });
    });
  }

  /// Whether attempt_ of `task` may run again: its workflow is open, the task is not over and
  /// has not moved on to a later attempt.
  bool attempt_may_go_on(const std::string& task) const {
    const TaskStatus* status = status_of(task);
    return may_start(task) && status->attempt == attempt_;
  }

  const TaskRun& piece() const { return pieces_[piece_index_]; }

  kj::Promise<Result<void>> read_piece() {
    auto worker = ports_.worker(piece().worker);
    if (!worker) return request_.follow ? follow_attempt(/*unread=*/true) : not_connected();
    auto request = worker->readLogRequest();
    request.setInvocationId(piece().invocation_id);
    request.setStream(schema::LogStream::COMBINED);
    request.setOffset(offset_);
    request.setMaxBytes(chunk_bytes);
    return request.send().then(
        [this](capnp::Response<schema::WorkerControl::ReadLogResults>&& response) { return on_read(response); },
        [this](kj::Exception&& e) -> kj::Promise<Result<void>> {
          if (e.getType() == kj::Exception::Type::UNIMPLEMENTED) {
            return Result<void>(fail(Errc::UNIMPLEMENTED, "worker '" + piece().worker +
                                                              "' runs an older troupe, which cannot send logs; " +
                                                              where(piece(), "")));
          }
          return request_.follow ? follow_attempt(/*unread=*/true) : not_connected();
        });
  }

  kj::Promise<Result<void>> on_read(schema::WorkerControl::ReadLogResults::Reader response) {
    if (response.hasError() && response.getError().getCode() != schema::ErrorCode::NONE) {
      auto error = response.getError();
      if (error.getCode() == schema::ErrorCode::NOT_FOUND) {
        // The worker does not hold it: not there yet (runTask on its way), or it ran and its log
        // is gone. Only the first is worth waiting for, and only the last piece of an attempt
        // could be it.
        if (!piece().ended && request_.follow) return follow_attempt(/*unread=*/false);
        if (!piece().ended) return push({}, false, /*then_done=*/true);
        if (pieces_.size() > 1) return skip_piece();
      }
      return Result<void>(fail(static_cast<Errc>(static_cast<uint16_t>(error.getCode())), text(error.getMessage())));
    }
    const auto data = response.getData();
    const bool complete = response.getComplete();
    offset_ = response.getNextOffset();
    // Not following, a log still growing ends where it was when read.
    const bool done = complete || (!request_.follow && data.size() < chunk_bytes && offset_ >= response.getSize());
    if (!first_ && data.size() == 0 && !complete) {
      if (done) return piece_done();
      return poll_again(0);
    }
    return push(std::string(reinterpret_cast<const char*>(data.begin()), data.size()), complete, done);
  }

  /// Sends `data` as the next chunk of the current piece, then reads on (or moves to the next
  /// piece once `then_done`).
  kj::Promise<Result<void>> push(std::string data, bool last, bool then_done) {
    auto request = sink_.writeRequest(message_size(data.size() + piece().invocation_id.size() + 256));
    auto chunk = request.initChunk();
    chunk.setTask(tasks_[task_index_]);
    chunk.setAttempt(attempt_);
    chunk.setInvocationId(piece().invocation_id);
    chunk.setWorker(piece().worker);
    chunk.setOffset(offset_ - data.size());
    chunk.setData(as_data(data));
    chunk.setFirst(first_);
    chunk.setLast(last);
    chunk.setPath(piece().log_path);
    first_ = false;
    const size_t got = data.size();
    return request.send().then([this, then_done, got](capnp::Response<schema::LogSink::WriteResults>&& response) {
      if (response.getStop()) return kj::Promise<Result<void>>(Result<void>(ok()));  // the client has enough
      if (then_done) return piece_done();
      if (got == chunk_bytes) return read_piece();  // more is there already
      return poll_again(got);
    });
  }

  /// Reads the current piece again: at once when not following (it has more), else after a
  /// pause that is short while the log grows (`got` bytes came) and longer while it is quiet.
  kj::Promise<Result<void>> poll_again(size_t got) {
    if (!request_.follow) return read_piece();
    poll_ = got > 0 ? min_poll : std::min(poll_ * 2, max_poll);
    return timer_.afterDelay(poll_).then([this] { return read_piece(); });
  }

  /// Where the log of `run` is, for people: its path and host as far as they are known.
  static std::string where(const TaskRun& run, const std::string& host) {
    const std::string on = host.empty() ? "" : " on " + host;
    if (!run.log_path.empty()) return "its log is at " + run.log_path + on;
    return "its log is in that worker's log_dir" + on;
  }

  kj::Promise<Result<void>> not_connected() {
    TaskRun run = piece();
    std::string task = tasks_[task_index_];
    return ports_.hostname(run.worker).then([run, task](std::string host) -> Result<void> {
      return fail(Errc::DISCONNECTED, "worker '" + run.worker + "', which ran attempt " + std::to_string(run.attempt) +
                                          " of task '" + task + "', is not connected now; " + where(run, host) +
                                          " (read it there, or start the worker again)");
    });
  }

  TaskLogPorts ports_;
  TaskLogRequest request_;
  schema::LogSink::Client sink_;
  kj::Timer& timer_;
  WorkflowStatus status_;
  TaskRuns runs_;
  uint64_t next_sequence_ = 1;  ///< the first history event not read yet
  std::vector<std::string> tasks_;  ///< whose logs are streamed, in order
  size_t task_index_ = 0;
  uint32_t attempt_ = 0;           ///< the attempt of tasks_[task_index_] being streamed
  std::vector<TaskRun> pieces_;    ///< its invocations, in order
  size_t piece_index_ = 0;
  uint64_t offset_ = 0;            ///< where the next read of the current piece starts
  bool first_ = true;              ///< no chunk of the current piece was pushed yet
  kj::Duration poll_ = min_poll;
};

}  // namespace

kj::Promise<Result<void>> stream_task_logs(TaskLogPorts ports, TaskLogRequest request, schema::LogSink::Client sink,
                                           kj::Timer& timer) {
  auto stream = kj::heap<TaskLogStream>(std::move(ports), std::move(request), kj::mv(sink), timer);
  auto running = stream->run();
  return running.attach(kj::mv(stream));
}

}  // namespace troupe::runtime
