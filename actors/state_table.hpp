// A state machine as a plain table: each (state, event) pair is a transition with the
// actions the actor runs in order, an explicitly ignored pair, or a rejection with a message.
// No CAF and no RPC here, so machines are unit tested as tables and printed as documentation.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "schema/json_syntax.hpp"
#include "schema/result.hpp"

namespace troupe::actors {

/// Up to eight actions in the order the actor must run them.
template <class Action>
class ActionList {
 public:
  constexpr ActionList() = default;
  constexpr ActionList(std::initializer_list<Action> actions) {
    for (Action a : actions) items_[size_++] = a;
  }
  constexpr const Action* begin() const { return items_.data(); }
  constexpr const Action* end() const { return items_.data() + size_; }
  constexpr size_t size() const { return size_; }
  constexpr bool contains(Action a) const {
    for (Action x : *this) {
      if (x == a) return true;
    }
    return false;
  }
  friend constexpr bool operator==(const ActionList& a, const ActionList& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (a.items_[i] != b.items_[i]) return false;
    }
    return true;
  }

 private:
  std::array<Action, 8> items_{};
  uint8_t size_ = 0;
};

template <class State, class Action>
struct Transition {
  State to;
  ActionList<Action> actions;
  /// Accepted on purpose with no effect (e.g. a repeated request); `note` says why.
  bool ignored = false;
  std::string_view note;
};

/// One row of a machine's table.
template <class State, class Event, class Action>
struct Row {
  State from;
  Event event;
  State to;
  ActionList<Action> actions;
  bool ignored = false;
  std::string_view note = {};
};

/// A machine's whole table, looked up in O(1). `Traits` supplies the enums' sizes and names:
///   static constexpr size_t states, events;  static std::string_view name(State/Event/Action).
template <class Traits>
class StateTable {
 public:
  using State = typename Traits::State;
  using Event = typename Traits::Event;
  using Action = typename Traits::Action;
  using RowType = Row<State, Event, Action>;
  using TransitionType = Transition<State, Action>;

  explicit StateTable(std::vector<RowType> rows) : rows_(std::move(rows)) {
    cells_.fill(-1);
    for (size_t i = 0; i < rows_.size(); ++i) {
      auto& cell = cells_[index(rows_[i].from, rows_[i].event)];
      if (cell >= 0) throw std::logic_error("state table defines a pair twice");
      cell = static_cast<int>(i);
    }
  }

  /// The transition for `event` in `state`, or NOT_ALLOWED_IN_STATE: "PAUSE is not allowed in
  /// state SUCCESS".
  Result<TransitionType> transition(State state, Event event) const {
    const int cell = cells_[index(state, event)];
    if (cell < 0) {
      return fail(Errc::NOT_ALLOWED_IN_STATE, std::string(Traits::name(event)) +
                                                  " is not allowed in state " +
                                                  std::string(Traits::name(state)));
    }
    const RowType& row = rows_[cell];
    return TransitionType{row.to, row.actions, row.ignored, row.note};
  }

  const std::vector<RowType>& rows() const { return rows_; }

  /// The state called `name` (as Traits names it); nullopt for none.
  static std::optional<State> parse_state(std::string_view name) {
    for (size_t s = 0; s < Traits::states; ++s) {
      if (Traits::name(static_cast<State>(s)) == name) return static_cast<State>(s);
    }
    return std::nullopt;
  }

  /// The table as Markdown: one line per defined pair, then the rejected pairs per state.
  std::string markdown(std::string_view title) const {
    std::string out = "### " + std::string(title) + "\n\n| state | event | next state | actions |\n|---|---|---|---|\n";
    for (const auto& row : rows_) {
      out += "| " + std::string(Traits::name(row.from)) + " | " + std::string(Traits::name(row.event)) +
             " | " + (row.ignored ? "(ignored: " + std::string(row.note) + ")" : std::string(Traits::name(row.to))) +
             " | " + action_text(row.actions) + " |\n";
    }
    out += "\nEvery other (state, event) pair is rejected: \"EVENT is not allowed in state STATE\".\n";
    return out;
  }

  /// The table as a Graphviz digraph: states as nodes, transitions as labelled edges.
  std::string dot(std::string_view graph_name) const {
    std::string out = "digraph " + std::string(graph_name) + " {\n  rankdir=LR;\n";
    for (const auto& row : rows_) {
      if (row.ignored) continue;
      out += "  " + std::string(Traits::name(row.from)) + " -> " + std::string(Traits::name(row.to)) +
             " [label=\"" + std::string(Traits::name(row.event)) + "\"];\n";
    }
    out += "}\n";
    return out;
  }

  /// The table as one JSON object: {"states": [...], "events": [...], "transitions": [{"from",
  /// "event", "to", "actions": [...], "ignored", "note"}]}; every pair not listed is rejected.
  std::string json() const {
    std::string out = "{\"states\":[";
    for (size_t i = 0; i < Traits::states; ++i) {
      out += (i ? "," : "") + json_quote(Traits::name(static_cast<State>(i)));
    }
    out += "],\"events\":[";
    for (size_t i = 0; i < Traits::events; ++i) {
      out += (i ? "," : "") + json_quote(Traits::name(static_cast<Event>(i)));
    }
    out += "],\"transitions\":[";
    for (size_t r = 0; r < rows_.size(); ++r) {
      const auto& row = rows_[r];
      out += std::string(r ? "," : "") + "{\"from\":" + json_quote(Traits::name(row.from)) +
             ",\"event\":" + json_quote(Traits::name(row.event)) + ",\"to\":" + json_quote(Traits::name(row.to)) +
             ",\"actions\":[";
      bool first = true;
      for (Action a : row.actions) {
        out += (first ? "" : ",") + json_quote(Traits::name(a));
        first = false;
      }
      out += std::string("],\"ignored\":") + (row.ignored ? "true" : "false") + ",\"note\":" + json_quote(row.note) + "}";
    }
    return out + "]}";
  }

  static std::string action_text(const ActionList<Action>& actions) {
    std::string out;
    for (Action a : actions) out += (out.empty() ? "" : ", ") + std::string(Traits::name(a));
    return out;
  }

 private:
  static size_t index(State s, Event e) {
    return static_cast<size_t>(s) * Traits::events + static_cast<size_t>(e);
  }
  std::vector<RowType> rows_;
  std::array<int, Traits::states * Traits::events> cells_;
};

}  // namespace troupe::actors
