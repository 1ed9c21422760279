// Error and Result<T>: expected failures as values (std::expected is C++23).
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "schema/errc.hpp"

namespace troupe {

/// An expected failure: what kind (the caller's reaction) and a message saying what failed,
/// where, and what to do about it.
struct Error {
  Errc code = Errc::INTERNAL;
  std::string message;

  /// "not_found: workflow 'x' has no history".
  std::string to_string() const;

  friend bool operator==(const Error&, const Error&) = default;
};

/// Shorthand for building an error: `return fail(Errc::NOT_FOUND, "...")`.
inline Error fail(Errc code, std::string message) { return Error{code, std::move(message)}; }

/// Either a T or an Error, shaped like std::expected<T, Error>.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  Error& error() { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation that returns nothing on success.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}

  bool has_value() const { return !failed_; }
  explicit operator bool() const { return has_value(); }
  const Error& error() const { return error_; }
  Error& error() { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

/// The success value of a Result<void>.
inline Result<void> ok() { return {}; }

}  // namespace troupe
