// What the scheduler knows of one connection to its gateway: whether a credential admitted it,
// what it has sent, and what it has in progress. The listener that keeps connections within
// their limits and the gateway that admits them share it. Std-only; RPC thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace troupe::runtime {

class ConnectionTicket {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = Clock::duration;

  ConnectionTicket(uint64_t id, std::string peer, Clock::time_point accepted_at)
      : id_(id), peer_(std::move(peer)), accepted_at_(accepted_at), quiet_since_(accepted_at) {}
  ConnectionTicket(const ConnectionTicket&) = delete;
  ConnectionTicket& operator=(const ConnectionTicket&) = delete;

  /// A Gateway call presented a credential the scheduler accepts, naming `identity` (empty when
  /// the cluster has no credentials): the handshake timeout and the unadmitted-bytes limit no
  /// longer apply.
  void admit(std::string identity) {
    admitted_ = true;
    identity_ = std::move(identity);
  }
  /// A Gateway call presented a credential the scheduler refused. Nothing more is read from
  /// the connection, and it closes once the refusal had time to go out: whoever guesses
  /// credentials needs a connection per guess.
  void refuse() {
    if (refused_) return;
    refused_ = true;
    if (on_refused_) on_refused_();
  }

  void call_started() { ++calls_in_flight_; }
  void call_ended() {
    if (calls_in_flight_ > 0) --calls_in_flight_;
    ++reads_;
  }
  /// Called by the stream for every read it starts (a message, or part of one, has arrived).
  /// A count, not a clock reading: the stream is on the hot path, the idle check is not.
  void reading() { ++reads_; }
  /// Called by the stream before admission: `bytes` arrived.
  void unadmitted_read(uint64_t bytes) { unadmitted_bytes_ += bytes; }

  /// Whether the connection has been idle since `now - timeout`: nothing read, no call in
  /// progress. Called by the listener's periodic check, which is what notices reads.
  bool idle_for(Duration timeout, Clock::time_point now) {
    if (reads_ != reads_seen_ || calls_in_flight_ > 0) {
      reads_seen_ = reads_;
      quiet_since_ = now;
      return false;
    }
    return now - quiet_since_ >= timeout;
  }

  uint64_t id() const { return id_; }
  /// The peer's IP address, as the per-peer limit counts it.
  const std::string& peer() const { return peer_; }
  bool admitted() const { return admitted_; }
  bool refused() const { return refused_; }
  const std::string& identity() const { return identity_; }
  uint32_t calls_in_flight() const { return calls_in_flight_; }
  uint64_t unadmitted_bytes() const { return unadmitted_bytes_; }
  Clock::time_point accepted_at() const { return accepted_at_; }

  /// The common name of the certificate the peer presented in its TLS handshake (empty: none).
  void certificate_name(std::string name) { certificate_name_ = std::move(name); }
  const std::string& certificate_name() const { return certificate_name_; }

  /// Set by the listener: what refuse() sets in motion.
  void on_refused(std::function<void()> f) { on_refused_ = std::move(f); }

 private:
  uint64_t id_;
  std::string peer_;
  Clock::time_point accepted_at_;
  uint64_t reads_ = 0;       ///< reads started, and calls ended
  uint64_t reads_seen_ = 0;  ///< reads_ at the last idle check that saw it change
  Clock::time_point quiet_since_;
  bool admitted_ = false;
  bool refused_ = false;
  std::string identity_;
  std::string certificate_name_;
  uint32_t calls_in_flight_ = 0;
  uint64_t unadmitted_bytes_ = 0;
  std::function<void()> on_refused_;
};

}  // namespace troupe::runtime
