// A connection stream that batches system calls for Cap'n Proto RPC.
//
// capnp 0.9 writes every RPC message with its own writev and reads each message with at
// least two reads (its first word, then the rest). At thousands of tasks a second that is
// most of a node's kernel time. BufferedStream sits between a TwoPartyVatNetwork and the
// socket:
//  - writes are copied into a buffer and go out together, in one write, when the event loop
//    has run everything it had queued and is about to wait for I/O (kj::evalLast): every
//    message one burst of work produced costs one system call;
//  - reads take whatever the socket holds, up to a read-ahead buffer's size, and serve the
//    following small reads from it.
// A write returns at once unless the buffer holds more than `max_buffered_bytes`; then it
// returns once its bytes have been written to the socket, so a slow peer slows the writer
// down as before. A server's stream can also hold reads back while that much waits to go out:
// a peer that sends calls and never reads their answers then stops being heard instead of
// making the server queue answers without end.
#pragma once

#include <cstddef>
#include <vector>

#include <kj/async-io.h>

namespace troupe::runtime {

class BufferedStream final : public kj::AsyncIoStream, private kj::TaskSet::ErrorHandler {
 public:
  /// Bytes read ahead per read system call: a burst of a hundred small RPC messages. Allocated
  /// at the first read, so a connection that only waits costs nothing for it.
  static constexpr size_t read_ahead_bytes = 16 * 1024;
  /// Buffered bytes beyond which a write waits for the buffer to drain.
  static constexpr size_t max_buffered_bytes = 1024 * 1024;

  /// What the stream does when the peer reads less than it is sent.
  enum class Backlog {
    KEEP_READING,  ///< a client's: answers to its calls must keep arriving
    HOLD_READS,    ///< a server's: read nothing more while over max_buffered_bytes wait to go out
  };

  explicit BufferedStream(kj::Own<kj::AsyncIoStream> inner, Backlog backlog = Backlog::KEEP_READING);
  ~BufferedStream() noexcept(false);

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  /// Shuts the write side down once everything written before has gone out.
  void shutdownWrite() override;
  void abortRead() override;
  void getsockopt(int level, int option, void* value, kj::uint* length) override;
  void setsockopt(int level, int option, const void* value, kj::uint length) override;
  void getsockname(struct sockaddr* addr, kj::uint* length) override;
  void getpeername(struct sockaddr* addr, kj::uint* length) override;
  kj::Maybe<int> getFd() const override;

 private:
  void taskFailed(kj::Exception&& exception) override;

  /// Copies buffered read-ahead bytes into `out`, at most `max`; returns how many.
  size_t take_read_ahead(kj::byte* out, size_t max);
  kj::Promise<size_t> read_more(kj::byte* out, size_t have, size_t min_bytes, size_t max_bytes);
  /// Bytes written by the caller that have not reached the socket yet.
  size_t backlog() const { return pending_.size() + writing_.size(); }
  /// Lets reads held back by the backlog go on, once it is small again.
  void release_reads();

  /// Called after bytes were added to `pending_`: arranges for them to go out.
  kj::Promise<void> after_append();
  /// Writes `pending_` and whatever is added meanwhile, until nothing is left.
  kj::Promise<void> flush();

  kj::Own<kj::AsyncIoStream> inner_;

  std::vector<kj::byte> read_ahead_;
  size_t read_begin_ = 0;
  size_t read_end_ = 0;

  std::vector<kj::byte> pending_;  ///< written by the caller, not yet handed to `inner_`
  std::vector<kj::byte> writing_;  ///< handed to `inner_`, its write not yet done
  bool flushing_ = false;          ///< a flush is scheduled or in progress
  bool shutdown_requested_ = false;
  kj::Maybe<kj::Exception> write_error_;
  /// Writers held back (the buffer was over max_buffered_bytes) until their bytes are written.
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> drain_waiters_;
  Backlog backlog_policy_;
  /// Reads held back (HOLD_READS) until the backlog is at most max_buffered_bytes.
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> read_waiters_;

  kj::TaskSet tasks_;  ///< last: destroyed (cancelling a flush) before the buffers it uses
};

}  // namespace troupe::runtime
