// Random workflows for property tests: definitions of random shape, handlers and policies, and
// the handlers they name. Every task is bounded by timeouts, so every run ends.
#pragma once

#include <random>
#include <string>

#include "test/support/actor_fixture.hpp"

namespace troupe::test {

/// A random session of some of `tasks` tasks (t0, t1, ...), as a JSON object: env actions or
/// not, timeouts or not, failing or recreated when its worker is lost.
inline std::string random_session(std::mt19937_64& rng, int tasks) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::string members;
  for (int t = 0; t < tasks; ++t) {
    if (members.empty() || pick(2) == 0) members += std::string(members.empty() ? "" : ",") + "\"t" + std::to_string(t) + "\"";
  }
  std::string json = R"({"name": "s", "tasks": [)" + members + "]";
  if (pick(2) == 0) json += R"(, "envEnter": {"handler": "noop"})";
  if (pick(2) == 0) json += R"(, "envExit": {"handler": "noop"})";
  if (pick(2) == 0) json += R"(, "creationTimeout": ")" + std::to_string(1 + pick(10)) + R"(s")";
  if (pick(3) == 0) json += R"(, "executionTimeout": ")" + std::to_string(5 + pick(60)) + R"(s")";
  if (pick(2) == 0) {
    json += R"(, "onFailure": "recreate", "maxRecreates": )" + std::to_string(1 + pick(3));
    if (pick(2) == 0) json += R"(, "rerunAll": true)";
  }
  return json + "}";
}

/// A random workflow of 1-7 tasks of the random handlers (add_random_handlers), with a session
/// of some of them if `sessions`.
inline std::string random_definition(std::mt19937_64& rng, bool sessions = false) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int tasks = 1 + pick(7);
  std::string json = R"({"name": "random", "tasks": [)";
  for (int t = 0; t < tasks; ++t) {
    if (t) json += ",";
    json += R"({"name": "t)" + std::to_string(t) + R"(")";
    static const char* handlers[] = {"noop", "noop", "fail", "flaky", "hang", "beat", "sleep"};
    const std::string handler = handlers[pick(7)];
    json += R"(, "handler": ")" + handler + R"(")";
    if (handler == "sleep") json += R"(, "input": {"duration": ")" + std::to_string(1 + pick(20)) + R"(s"})";
    std::string deps;
    for (int d = 0; d < t; ++d) {
      if (pick(3) == 0) deps += std::string(deps.empty() ? "" : ",") + "\"t" + std::to_string(d) + "\"";
    }
    if (!deps.empty()) json += R"(, "dependsOn": [)" + deps + "]";
    // Every task is bounded, so every run ends.
    json += R"(, "timeouts": {"scheduleToStart": "1m", "startToClose": ")" + std::to_string(5 + pick(30)) +
            R"(s", "heartbeat": "4s"})";
    if (pick(2) == 0) {
      json += R"(, "retry": {"initialInterval": ")" + std::to_string(1 + pick(3)) +
              R"(s", "maximumAttempts": )" + std::to_string(1 + pick(4)) + "}";
    }
    json += "}";
  }
  if (sessions) return json + R"(], "sessions": [)" + random_session(rng, tasks) + "]}";
  return json + "]}";
}

inline void add_random_handlers(ActorFixture& fx) {
  fx.handlers->add("fail", [](std::shared_ptr<actors::TaskContext> ctx) { ctx->fail("Oops", "random failure"); });
  fx.handlers->add("flaky", [](std::shared_ptr<actors::TaskContext> ctx) {
    if (ctx->attempt() < 2) ctx->fail("Oops"); else ctx->succeed("ok");
  });
  fx.handlers->add("hang", [](std::shared_ptr<actors::TaskContext>) {});
  fx.handlers->add("beat", [](std::shared_ptr<actors::TaskContext> ctx) {
    ctx->heartbeat("p" + std::to_string(ctx->attempt()));
    ctx->after(std::chrono::seconds(2), [ctx] {
      ctx->heartbeat("q" + std::to_string(ctx->attempt()));
      ctx->succeed(ctx->progress());
    });
  });
}


}  // namespace troupe::test
