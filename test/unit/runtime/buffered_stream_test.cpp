// BufferedStream: the bytes are the same as without it, but a burst of writes costs one
// write on the socket and a burst of small reads one read; a shutdown waits for the
// buffered bytes; a slow peer holds writers back; a failed write fails later ones.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <kj/async-io.h>
#include <kj/debug.h>

#include "runtime/net/buffered_stream.hpp"

using troupe::runtime::BufferedStream;

namespace {

/// Passes everything to a pipe end and counts the calls that would be system calls.
class CountingStream final : public kj::AsyncIoStream {
 public:
  explicit CountingStream(kj::Own<kj::AsyncIoStream> inner) : inner_(kj::mv(inner)) {}
  int reads = 0;
  int writes = 0;
  bool fail_writes = false;

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override {
    ++reads;
    return inner_->tryRead(buffer, min_bytes, max_bytes);
  }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    ++writes;
    if (fail_writes) return KJ_EXCEPTION(DISCONNECTED, "peer gone");
    return inner_->write(buffer, size);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    ++writes;
    if (fail_writes) return KJ_EXCEPTION(DISCONNECTED, "peer gone");
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }

 private:
  kj::Own<kj::AsyncIoStream> inner_;
};

struct Pipe {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  CountingStream* counted = nullptr;  // owned by `buffered`
  kj::Own<BufferedStream> buffered;
  kj::Own<kj::AsyncIoStream>& peer = pipe.ends[1];

  explicit Pipe(BufferedStream::Backlog backlog = BufferedStream::Backlog::KEEP_READING) {
    auto counting = kj::heap<CountingStream>(kj::mv(pipe.ends[0]));
    counted = counting.get();
    buffered = kj::heap<BufferedStream>(kj::mv(counting), backlog);
  }

  /// Reads exactly `n` bytes from the peer end.
  std::string peer_reads(size_t n) {
    std::string out(n, '\0');
    peer->read(out.data(), n).wait(io.waitScope);
    return out;
  }
};

std::string text(size_t n, char c) { return std::string(n, c); }

}  // namespace

TEST_SUITE("runtime.buffered_stream") {
  TEST_CASE("writes made in one burst reach the peer intact, in order, in one write") {
    Pipe p;
    std::string expected;
    for (int i = 0; i < 50; ++i) {
      const std::string message = "message " + std::to_string(i) + ";";
      expected += message;
      // Each returns at once: the bytes are copied, not yet written.
      auto written = p.buffered->write(message.data(), message.size());
      CHECK(written.poll(p.io.waitScope));
      written.wait(p.io.waitScope);
    }
    CHECK(p.counted->writes == 0);
    CHECK(p.peer_reads(expected.size()) == expected);
    CHECK(p.counted->writes == 1);
  }

  TEST_CASE("pieces written together arrive as one message; a later burst is a second write") {
    Pipe p;
    const std::string a = "head", b = "body";
    kj::ArrayPtr<const kj::byte> pieces[] = {kj::StringPtr(a.c_str()).asBytes(), kj::StringPtr(b.c_str()).asBytes()};
    p.buffered->write(kj::arrayPtr(pieces, 2)).wait(p.io.waitScope);
    CHECK(p.peer_reads(8) == "headbody");
    p.buffered->write("tail", 4).wait(p.io.waitScope);
    CHECK(p.peer_reads(4) == "tail");
    CHECK(p.counted->writes == 2);
  }

  TEST_CASE("a burst of small reads is served by one read of the socket") {
    Pipe p;
    std::string sent;
    for (int i = 0; i < 100; ++i) sent += "0123456789abcdef";  // 100 records of 16 bytes
    p.peer->write(sent.data(), sent.size()).wait(p.io.waitScope);
    std::string received;
    for (int i = 0; i < 100; ++i) {
      char record[16];
      const size_t n = p.buffered->tryRead(record, 16, 16).wait(p.io.waitScope);
      REQUIRE(n == 16);
      received.append(record, n);
    }
    CHECK(received == sent);
    CHECK(p.counted->reads == 1);
  }

  TEST_CASE("a read larger than the read-ahead goes straight through, after what was buffered") {
    Pipe p;
    const std::string small = "abcd";
    const std::string large = text(3 * BufferedStream::read_ahead_bytes, 'x');
    p.peer->write(small.data(), small.size()).wait(p.io.waitScope);
    char first[2];
    REQUIRE(p.buffered->tryRead(first, 2, 2).wait(p.io.waitScope) == 2);
    auto writing = p.peer->write(large.data(), large.size()).eagerlyEvaluate(nullptr);
    std::string got(2 + large.size(), '\0');
    const size_t n = p.buffered->tryRead(got.data(), got.size(), got.size()).wait(p.io.waitScope);
    writing.wait(p.io.waitScope);
    CHECK(n == got.size());
    CHECK(got == "cd" + large);
  }

  TEST_CASE("the end of the stream gives a short read with what was there") {
    Pipe p;
    p.peer->write("xyz", 3).wait(p.io.waitScope);
    p.peer->shutdownWrite();
    char buffer[8];
    CHECK(p.buffered->tryRead(buffer, 8, 8).wait(p.io.waitScope) == 3);
    CHECK(std::string(buffer, 3) == "xyz");
    CHECK(p.buffered->tryRead(buffer, 1, 8).wait(p.io.waitScope) == 0);
  }

  TEST_CASE("shutdownWrite waits for the buffered bytes, then the peer sees the end") {
    Pipe p;
    p.buffered->write("last words", 10).wait(p.io.waitScope);
    p.buffered->shutdownWrite();
    std::string got(32, '\0');
    const size_t n = p.peer->tryRead(got.data(), got.size(), got.size()).wait(p.io.waitScope);
    CHECK(got.substr(0, n) == "last words");
  }

  TEST_CASE("a writer beyond the buffer's limit waits until the peer has taken bytes") {
    Pipe p;
    const std::string big = text(BufferedStream::max_buffered_bytes + 1, 'b');
    auto first = p.buffered->write(big.data(), big.size());
    // The pipe holds far less than the buffer: the write stays pending until the peer reads.
    CHECK_FALSE(first.poll(p.io.waitScope));
    CHECK(p.peer_reads(big.size()) == big);
    first.wait(p.io.waitScope);
  }

  TEST_CASE("a failed write fails the writes after it") {
    Pipe p;
    p.counted->fail_writes = true;
    p.buffered->write("lost", 4).wait(p.io.waitScope);  // buffered: accepted
    // Let the flush run and fail.
    kj::evalLater([] {}).wait(p.io.waitScope);
    p.io.provider->getTimer().afterDelay(1 * kj::MILLISECONDS).wait(p.io.waitScope);
    CHECK(p.counted->writes == 1);
    CHECK_THROWS_WITH(p.buffered->write("more", 4).wait(p.io.waitScope), doctest::Contains("peer gone"));
  }

  TEST_CASE("a server's stream reads nothing while its peer leaves too much unread, and reads again once it took it") {
    Pipe p(BufferedStream::Backlog::HOLD_READS);
    const std::string big = text(BufferedStream::max_buffered_bytes + 1, 'b');
    auto written = p.buffered->write(big.data(), big.size());
    p.peer->write("call", 4).wait(p.io.waitScope);
    char got[4];
    auto read = p.buffered->tryRead(got, 4, 4);
    // The peer sent a call but has not read the answers: the call is not taken.
    CHECK_FALSE(read.poll(p.io.waitScope));
    CHECK(p.peer_reads(big.size()) == big);
    written.wait(p.io.waitScope);
    CHECK(read.wait(p.io.waitScope) == 4);
    CHECK(std::string(got, 4) == "call");
  }

  TEST_CASE("a client's stream keeps reading whatever it has not written yet") {
    Pipe p;
    const std::string big = text(BufferedStream::max_buffered_bytes + 1, 'b');
    auto written = p.buffered->write(big.data(), big.size());
    p.peer->write("answer", 6).wait(p.io.waitScope);
    char got[6];
    CHECK(p.buffered->tryRead(got, 6, 6).wait(p.io.waitScope) == 6);
    CHECK(p.peer_reads(big.size()) == big);
    written.wait(p.io.waitScope);
  }
}
