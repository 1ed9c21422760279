// The RPC thread: a kj::EventLoop with an eventfd that other threads write to after queueing
// work. (kj::Executor would need an event loop on the posting thread, which CAF threads lack.)
#include "runtime/rpc_thread.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/debug.h>

#include "schema/node_log.hpp"

namespace troupe::runtime {

namespace {

/// Errors of detached tasks: logged, never fatal to the node.
class LogTaskErrors final : public kj::TaskSet::ErrorHandler {
 public:
  explicit LogTaskErrors(std::shared_ptr<NodeLog> log) : log_(std::move(log)) {}
  void taskFailed(kj::Exception&& exception) override {
    if (exception.getType() == kj::Exception::Type::DISCONNECTED) return;  // a peer went away
    log_or_none(log_).error("an RPC task failed", {{"error", exception.getDescription().cStr()}});
  }

 private:
  std::shared_ptr<NodeLog> log_;
};

}  // namespace

struct RpcThread::Impl {
  std::shared_ptr<NodeLog> log;
  int wake_fd = -1;
  std::mutex mutex;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  bool stopped = false;
  std::thread thread;
  std::thread::id thread_id;

  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void wake() {
    const uint64_t one = 1;
    // EAGAIN means the counter is already non-zero: the loop will wake anyway.
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }

  /// Runs queued work until the queue is empty; false once stop was asked for.
  bool drain() {
    for (;;) {
      std::deque<std::function<void()>> batch;
      {
        std::lock_guard lock(mutex);
        if (queue.empty()) return !stopping;
        batch.swap(queue);
      }
      for (auto& work : batch) {
        KJ_IF_MAYBE(exception, kj::runCatchingExceptions([&] { work(); })) {
          log_or_none(log).error("work posted to the RPC thread failed", {{"error", exception->getDescription().cStr()}});
        }
      }
    }
  }

  void run(RpcThread& self, Setup setup, std::promise<Result<void>>& started) {
    thread_id = std::this_thread::get_id();
    KJ_IF_MAYBE(exception, kj::runCatchingExceptions([&] {
      auto io = kj::setupAsyncIo();
      LogTaskErrors errors(log);
      auto tasks = kj::heap<kj::TaskSet>(errors);
      auto ready = setup(self, io, *tasks);
      if (ready) {
        started.set_value(ok());
        serve(io, std::move(*ready));
      } else {
        started.set_value(ready.error());
      }
      tasks = nullptr;
      settle(io);
    })) {
      log_or_none(log).error("the RPC thread failed", {{"error", exception->getDescription().cStr()}});
      try {
        started.set_value(fail(Errc::INTERNAL, exception->getDescription().cStr()));
      } catch (const std::future_error&) {
        // started already
      }
    }
  }

  /// Runs posted work until stop(), then the teardown.
  void serve(kj::AsyncIoContext& io, std::function<void()> teardown) {
    kj::UnixEventPort::FdObserver observer(io.unixEventPort, wake_fd, kj::UnixEventPort::FdObserver::OBSERVE_READ);
    while (drain()) {
      observer.whenBecomesReadable().wait(io.waitScope);
      uint64_t count;
      while (::read(wake_fd, &count, sizeof count) > 0) {
      }
    }
    if (teardown) {
      auto last = std::move(teardown);
      last();
    }
  }

  /// Lets the loop run what tearing down scheduled, before it is destroyed: the connections and
  /// calls in flight (the task set) are gone by now, and destroying them queued events. A loop
  /// destroyed with events queued throws half way through its destructor, and cross-thread
  /// promises that CAF threads still resolve then reach a dead loop (the node crashed on exit).
  /// poll() also writes what it can of the disconnects without blocking.
  static void settle(kj::AsyncIoContext& io) {
    io.waitScope.cancelAllDetached();
    io.waitScope.poll();
  }
};

Result<std::unique_ptr<RpcThread>> RpcThread::start(std::shared_ptr<NodeLog> log, Setup setup) {
  auto impl = std::make_unique<Impl>();
  impl->log = std::move(log);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->wake_fd < 0) {
    return fail(Errc::INTERNAL, std::string("cannot create an eventfd: ") + std::strerror(errno));
  }
  // The thread object exists before its loop runs, so setup can hand it to what it builds.
  std::unique_ptr<RpcThread> thread(new RpcThread(std::move(impl)));
  std::promise<Result<void>> started;
  auto ready = started.get_future();
  RpcThread* self = thread.get();
  self->impl_->thread = std::thread([self, setup = std::move(setup), &started]() mutable {
    self->impl_->run(*self, std::move(setup), started);
  });
  auto result = ready.get();
  if (!result) {
    thread->stop();  // the loop has ended: only joins
    return result.error();
  }
  return thread;
}

RpcThread::RpcThread(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcThread::~RpcThread() { stop(); }

void RpcThread::post(std::function<void()> work) {
  bool was_empty = false;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return;
    was_empty = impl_->queue.empty();
    impl_->queue.push_back(std::move(work));
  }
  // Only the post that makes the queue non-empty needs to wake the loop: the loop drains the
  // whole queue after every wake, and a queue that was not empty has a wake on its way (or is
  // about to be taken by a drain in progress). A burst of posts costs one write, not one each.
  if (was_empty) impl_->wake();
}

void RpcThread::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopped) return;
    impl_->stopping = true;
    impl_->stopped = true;
  }
  impl_->wake();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool RpcThread::on_thread() const { return std::this_thread::get_id() == impl_->thread_id; }

}  // namespace troupe::runtime
