// The CAF -> KJ half of the bridge: a promise on the RPC thread that any thread may resolve.
// (The KJ -> CAF half is a plain anon_send with a Reply callback.)
#pragma once

#include <memory>

#include <kj/async.h>
#include <kj/debug.h>

#include "schema/result.hpp"

namespace troupe::runtime {

/// A promise for the RPC thread and a callback for CAF threads that resolves it once.
template <class T>
struct Bridged {
  kj::Promise<Result<T>> promise;
  std::function<void(Result<T>)> resolve;
};

template <class T>
Bridged<T> bridge() {
  auto pair = kj::newPromiseAndCrossThreadFulfiller<Result<T>>();
  auto fulfiller = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<Result<T>>>>(
      kj::mv(pair.fulfiller));
  return Bridged<T>{kj::mv(pair.promise), [fulfiller](Result<T> value) {
                      (*fulfiller)->fulfill(std::move(value));
                    }};
}

/// The kj::Exception of an error that travels as an RPC failure.
inline kj::Exception to_kj(const Error& error) {
  return KJ_EXCEPTION(FAILED, error.message.c_str());
}

}  // namespace troupe::runtime
