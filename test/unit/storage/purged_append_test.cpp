// A history begins only with its submission: an append to a workflow that is gone (purged
// while an actor still held it) is refused whole, by both stores alike, without stopping them.
#include <doctest/doctest.h>

#include "storage/codec.hpp"
#include "storage/memory_history_store.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/store_kinds.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

using test::InMemory;
using test::OnDisk;

WorkflowRecord record(WorkflowStatus status, int64_t created_us, std::string live_state) {
  return WorkflowRecord{status, "def", "digest", created_us, 0, "", std::move(live_state)};
}

/// What the actor of a retried workflow appends: a task event and the reopened record.
Result<AppendReceipt> retry_append(HistoryStore& store, const std::string& id) {
  return store.append_wait(id, {test::sample_event(0, 7, 0)}, record(WorkflowStatus::OPEN, 1, "RUNNING"));
}

void check_gone(HistoryStore& store, const std::string& id) {
  auto events = store.read(id, 1, 100);
  REQUIRE(events);
  CHECK(events->empty());
  CHECK(store.last_sequence(id).value() == 0);
  CHECK_FALSE(store.find_workflow(id).value());
  for (auto order : {ListOrder::ID, ListOrder::NEWEST_FIRST}) {
    ListQuery query;
    query.order = order;
    auto page = store.list_workflows(query);
    REQUIRE_MESSAGE(page, test::why(page));
    for (const auto& entry : page->entries) CHECK(entry.id != id);
  }
  auto open = store.scan_open("", 100);
  REQUIRE(open);
  for (const auto& entry : *open) CHECK(entry.id != id);
}

}  // namespace

TEST_SUITE("storage.purged_append") {
  TEST_CASE_TEMPLATE("an append to a purged workflow is NOT_FOUND, writes nothing and stops nothing", Store,
                     OnDisk, InMemory) {
    Store s;
    REQUIRE(s.store().append_wait("wf", {test::submitted_event(), test::sample_event(0, 1, 1)},
                                  record(WorkflowStatus::OPEN, 1, "RUNNING")));
    REQUIRE(s.store().append_wait("other", {test::submitted_event()}, record(WorkflowStatus::OPEN, 2, "RUNNING")));
    REQUIRE(s.store().close_wait("wf", 100));
    auto purged = s.store().purge_closed(500);
    REQUIRE(purged);
    REQUIRE(*purged == 1);

    auto late = retry_append(s.store(), "wf");
    REQUIRE_FALSE(late);
    CHECK(late.error().code == Errc::NOT_FOUND);
    CHECK(late.error().message == "workflow 'wf' no longer exists: it was purged");
    check_gone(s.store(), "wf");

    // A record alone would resurrect it just the same.
    auto record_only = s.store().append_wait("wf", {}, record(WorkflowStatus::OPEN, 1, "PAUSED"));
    REQUIRE_FALSE(record_only);
    CHECK(record_only.error().code == Errc::NOT_FOUND);
    check_gone(s.store(), "wf");

    // The refusal was the append's alone: the store takes the next writes.
    auto next = s.store().append_wait("other", {test::sample_event(0, 2, 0)});
    REQUIRE_MESSAGE(next, test::why(next));
    CHECK(next->first_sequence == 2);
    s.reopen();
    check_gone(s.store(), "wf");
    // The id may be submitted anew, and its history starts from 1.
    auto again = s.store().append_wait("wf", {test::submitted_event()}, record(WorkflowStatus::OPEN, 9, "RUNNING"));
    REQUIRE_MESSAGE(again, test::why(again));
    CHECK(again->first_sequence == 1);
    auto later = retry_append(s.store(), "wf");
    REQUIRE_MESSAGE(later, test::why(later));
    CHECK(later->first_sequence == 2);
  }

  TEST_CASE_TEMPLATE("only a submission begins a history", Store, OnDisk, InMemory) {
    Store s;
    auto task_first = s.store().append_wait("new", {test::sample_event(0, 1, 0), test::submitted_event()},
                                            record(WorkflowStatus::OPEN, 1, "RUNNING"));
    REQUIRE_FALSE(task_first);
    CHECK(task_first.error().code == Errc::NOT_FOUND);
    auto without_record = s.store().append_wait("new", {test::sample_event(0, 1, 0)});
    REQUIRE_FALSE(without_record);
    CHECK(without_record.error().code == Errc::NOT_FOUND);
    check_gone(s.store(), "new");
    auto submitted = s.store().append_wait("new", {test::submitted_event(), test::sample_event(0, 1, 0)});
    REQUIRE_MESSAGE(submitted, test::why(submitted));
    CHECK(submitted->first_sequence == 1);
    CHECK(submitted->count == 2);
  }
}
