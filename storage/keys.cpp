// Key encoding for the history store.
#include "storage/keys.hpp"

namespace troupe::storage {

Result<void> check_id(std::string_view id, std::string_view what) {
  if (id.empty()) return fail(Errc::INVALID_ARGUMENT, std::string(what) + " is empty");
  if (id.size() > max_id_bytes) {
    return fail(Errc::INVALID_ARGUMENT, std::string(what) + " is " + std::to_string(id.size()) +
                                            " bytes long; the limit is " +
                                            std::to_string(max_id_bytes));
  }
  if (id.find('\0') != std::string_view::npos) {
    return fail(Errc::INVALID_ARGUMENT, std::string(what) + " contains a NUL byte");
  }
  return ok();
}

std::string event_prefix(std::string_view workflow_id) {
  std::string key;
  key.reserve(workflow_id.size() + 1 + 8);
  key.append(workflow_id);
  key.push_back('\0');
  return key;
}

std::string event_key(std::string_view workflow_id, uint64_t sequence) {
  std::string key = event_prefix(workflow_id);
  for (int shift = 56; shift >= 0; shift -= 8) {
    key.push_back(static_cast<char>((sequence >> shift) & 0xff));
  }
  return key;
}

std::optional<EventKey> parse_event_key(std::string_view key) {
  if (key.size() < 1 + 1 + 8) return std::nullopt;
  const size_t separator = key.size() - 9;
  if (key[separator] != '\0') return std::nullopt;
  EventKey parsed;
  parsed.workflow_id = key.substr(0, separator);
  if (parsed.workflow_id.find('\0') != std::string_view::npos) return std::nullopt;
  for (size_t i = separator + 1; i < key.size(); ++i) {
    parsed.sequence = (parsed.sequence << 8) | static_cast<unsigned char>(key[i]);
  }
  return parsed;
}

namespace {

/// `created_us` as 8 bytes that sort in descending time order: the sign bit flipped makes
/// unsigned order signed order, and the complement reverses it.
uint64_t newest_first(int64_t created_us) {
  return ~(static_cast<uint64_t>(created_us) ^ (uint64_t{1} << 63));
}

}  // namespace

std::string created_key(int64_t created_us, std::string_view workflow_id) {
  std::string key;
  key.reserve(8 + workflow_id.size());
  const uint64_t order = newest_first(created_us);
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>((order >> shift) & 0xff));
  key.append(workflow_id);
  return key;
}

std::optional<CreatedKey> parse_created_key(std::string_view key) {
  if (key.size() < 8 + 1) return std::nullopt;
  uint64_t order = 0;
  for (size_t i = 0; i < 8; ++i) order = (order << 8) | static_cast<unsigned char>(key[i]);
  CreatedKey parsed;
  parsed.created_us = static_cast<int64_t>(~order ^ (uint64_t{1} << 63));
  parsed.workflow_id = key.substr(8);
  if (parsed.workflow_id.find('\0') != std::string_view::npos) return std::nullopt;
  return parsed;
}

std::string describe_event_key(std::string_view key, std::string_view owner) {
  if (auto parsed = parse_event_key(key)) {
    return std::string(owner) + " '" + std::string(parsed->workflow_id) + "' sequence " +
           std::to_string(parsed->sequence);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "key 0x";
  for (unsigned char c : key) {
    out.push_back(hex[c >> 4]);
    out.push_back(hex[c & 0xf]);
  }
  return out;
}

}  // namespace troupe::storage
