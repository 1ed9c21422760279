// The registry and the built-in handlers.
#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <kj/exception.h>

#include <optional>

#include "actors/executor/handler.hpp"

namespace troupe::actors {
namespace {

/// The string field `key` of a JSON object, or nullopt.
std::optional<std::string> json_string_field(const std::string& json, std::string_view key) {
  try {
    capnp::JsonCodec codec;
    capnp::MallocMessageBuilder message;
    auto value = message.initRoot<capnp::JsonValue>();
    codec.decodeRaw(kj::arrayPtr(json.data(), json.size()), value);
    if (!value.isObject()) return std::nullopt;
    for (auto field : value.getObject()) {
      if (std::string_view(field.getName().cStr()) == key && field.getValue().isString()) {
        return std::string(field.getValue().getString().cStr());
      }
    }
  } catch (const kj::Exception&) {
    // not JSON: no field
  }
  return std::nullopt;
}

void sleep_handler(std::shared_ptr<TaskContext> ctx) {
  auto text = json_string_field(ctx->input_json(), "duration");
  auto duration = text ? parse_duration(*text) : Result<Duration>(fail(Errc::INVALID_ARGUMENT, ""));
  if (!duration) {
    ctx->fail("BadInput", "sleep needs input like {\"duration\": \"10s\"}, got " + ctx->input_json(),
              true);
    return;
  }
  ctx->on_cancel([ctx] { ctx->cancelled(); });
  ctx->after(*duration, [ctx] { ctx->succeed("{\"ok\":true}"); });
}

}  // namespace

HandlerRegistry HandlerRegistry::with_builtins() {
  HandlerRegistry registry;
  registry.add("noop", [](std::shared_ptr<TaskContext> ctx) { ctx->succeed("{\"ok\":true}"); });
  registry.add("sleep", sleep_handler);
  return registry;
}

void HandlerRegistry::add(std::string name, Handler handler) {
  handlers_[std::move(name)] = std::move(handler);
}

const Handler* HandlerRegistry::find(std::string_view name) const {
  auto it = handlers_.find(name);
  return it == handlers_.end() ? nullptr : &it->second;
}

}  // namespace troupe::actors
