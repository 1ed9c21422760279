// The simulated network between a worker process and a scheduler: one Connection per TCP
// connection, carrying calls both ways as Cap'n Proto does. A call is a request that arrives
// after a delay, runs at the other end, and whose reply arrives after another delay. Faults
// are what a real connection shows: delays (now and then long ones, as TCP retransmits), calls
// overtaking each other, a request delivered twice, a connection that breaks (every call in
// flight fails at its caller, and a request or reply not yet delivered is lost), and a
// half-open connection that swallows everything until it is noticed, maybe never.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "test/sim/sim_world.hpp"

namespace troupe::sim {

/// The network's behaviour in one schedule: the chance of each fault per message.
struct NetworkProfile {
  Duration min_latency = 100us;
  Duration max_latency = 3ms;
  double spike = 0;          ///< a message is late by up to spike_max
  Duration spike_max = 1s;
  double reorder = 0;        ///< a message ignores the order of its connection
  double duplicate = 0;      ///< a repeatable request runs twice at the other end (the second answer is lost)
  double breaks = 0;         ///< the message is lost and the connection breaks
  double hangs = 0;          ///< the message is lost and the connection goes half-open
  Duration hang_noticed_min = 1s;   ///< a half-open connection is noticed after this...
  Duration hang_noticed_max = 40s;  ///< ...to this (a process's death is noticed sooner)

  std::string describe() const;
};

/// Which end makes a call.
enum class Side : uint8_t { WORKER, SCHEDULER };

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  /// Sends the reply of a call back to its caller; `reply` runs there when it arrives.
  using Responder = std::function<void(std::function<void()> reply)>;

  Connection(World& world, const NetworkProfile& profile, std::string label)
      : world_(world), profile_(profile), label_(std::move(label)) {}

  const std::string& label() const { return label_; }
  bool open() const { return open_; }

  /// A call from `from`. `handle` runs at the other end when the request arrives and answers
  /// through the Responder at most once. If the connection breaks before the reply arrives,
  /// `failed` runs at the caller instead (soon after the break), as a DISCONNECTED exception.
  /// On a broken connection the call fails at once (on the next turn of the caller's loop).
  /// `may_repeat`: the protocol itself may send it twice (a report, a heartbeat): the network
  /// may then deliver it twice. A request no sender ever repeats is never duplicated.
  void call(Side from, std::function<void(Responder)> handle, std::function<void()> failed, bool may_repeat = false);

  /// Breaks the connection: calls in flight fail at their callers and the worker end hears of
  /// the disconnect, each soon after.
  void close(const std::string& why);
  /// From now on nothing gets through; the connection breaks after `noticed` (never if
  /// `noticed` is `never`), as an unanswered TCP connection eventually does.
  void hang(Duration noticed);
  /// Holds everything sent until `until` and delivers it then, in order: a partition that
  /// heals, with TCP retransmitting.
  void stall(Time until);

  /// The worker end's onDisconnect: runs once, soon after the connection breaks.
  std::function<void()> on_disconnect;

 private:
  /// When a message sent now in direction `to` arrives (FIFO unless it is reordered).
  Time arrival(Side to);
  void deliver_request(uint64_t id, Side from, std::function<void(Responder)> handle, bool duplicate);

  World& world_;
  const NetworkProfile& profile_;
  std::string label_;
  bool open_ = true;
  bool silent_ = false;  ///< half-open: nothing is delivered
  Time stalled_until_{0};
  Time last_arrival_[2] = {Time{0}, Time{0}};
  uint64_t next_call_ = 0;
  std::map<uint64_t, std::function<void()>> pending_;  ///< calls awaiting a reply: their failure
};

}  // namespace troupe::sim
