// list_workflows: paged, filtered listing from the `workflows` index, the same on disk and in
// memory. Expected results come from a model of what was written, never from ListQuery itself.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

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

std::string id_of(const char* prefix, int i, int digits) {
  char id[32];
  std::snprintf(id, sizeof id, "%s%0*d", prefix, digits, i);
  return id;
}

WorkflowRecord open_record(std::string name, int64_t created_us) {
  return WorkflowRecord{WorkflowStatus::OPEN, std::move(name), "digest", created_us, 0, "", ""};
}

WorkflowRecord closed_record(std::string name, int64_t created_us, std::string final_state) {
  const int64_t closed_us = created_us + 5;
  return WorkflowRecord{WorkflowStatus::CLOSED, std::move(name), "digest", created_us, closed_us,
                        std::move(final_state), ""};
}

/// Writes every record with all appends in flight at once, so the group commit batches them.
void load(HistoryStore& store, const std::vector<WorkflowEntry>& workflows) {
  std::atomic<size_t> pending{workflows.size()};
  std::atomic<size_t> failures{0};
  std::promise<void> all_done;
  for (const auto& w : workflows) {
    store.append(w.id, {test::submitted_event()}, w.record, [&](Result<AppendReceipt> r) {
      if (!r) ++failures;
      if (--pending == 0) all_done.set_value();
    });
  }
  if (!workflows.empty()) all_done.get_future().wait();
  REQUIRE(failures == 0);
}

/// Pages through `query` from its `after` on, checking each page's shape, until the cursor
/// runs out. `calls` counts the pages.
std::vector<WorkflowEntry> list_all(HistoryStore& store, ListQuery query, size_t* calls = nullptr) {
  std::vector<WorkflowEntry> out;
  for (size_t n = 1;; ++n) {
    auto page = store.list_workflows(query);
    REQUIRE_MESSAGE(page, test::why(page));
    REQUIRE(page->entries.size() <= query.limit);
    for (auto& entry : page->entries) {
      REQUIRE(entry.id > query.after);  // after the cursor, in id order, never repeated
      REQUIRE((out.empty() || entry.id > out.back().id));
      out.push_back(std::move(entry));
    }
    if (page->next_cursor.empty()) {
      if (calls) *calls = n;
      return out;
    }
    // The cursor moves on, past every entry returned, or paging would never end.
    REQUIRE(page->next_cursor > query.after);
    REQUIRE((out.empty() || page->next_cursor >= out.back().id));
    query.after = page->next_cursor;
  }
}

std::vector<std::string> ids(const std::vector<WorkflowEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.id);
  return out;
}

/// 300 workflows whose attributes cycle with different periods, so every combination occurs;
/// a few are closed by close(), which records no final state. Written to `store`; returns the
/// model of what it now holds, in id order.
std::vector<WorkflowEntry> load_varied(HistoryStore& store) {
  static const char* const ends[] = {"SUCCESS", "FAILED", "STOPPED"};
  std::vector<WorkflowEntry> model;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "def-" + std::to_string(i % 4);
    const int64_t created = 1'000 + i * 10;
    model.push_back({id_of("wf-", i, 3), i % 5 < 2 ? open_record(name, created)
                                                   : closed_record(name, created, ends[i % 3])});
  }
  load(store, model);
  for (int i = 0; i < 300; i += 50) {  // open ones (i % 5 == 0), closed without a final state
    auto& entry = model[static_cast<size_t>(i)];
    REQUIRE(store.close_wait(entry.id, 9'999));
    entry.record.status = WorkflowStatus::CLOSED;
    entry.record.closed_us = 9'999;
  }
  return model;
}

}  // namespace

TEST_SUITE("storage.list") {
  TEST_CASE_TEMPLATE("paging over 10000 workflows returns every id exactly once, in order", Store,
                     OnDisk, InMemory) {
    Store s;
    std::vector<WorkflowEntry> written;
    // Written out of id order (7919 is coprime with 10000), so order comes from the index.
    for (int i = 0; i < 10'000; ++i) {
      const int n = i * 7919 % 10'000;
      written.push_back({id_of("wf-", n, 5), open_record("def-" + std::to_string(n % 7), n)});
    }
    load(s.store(), written);

    ListQuery query;
    query.limit = 300;
    size_t calls = 0;
    auto listed = list_all(s.store(), query, &calls);
    REQUIRE(listed.size() == 10'000);
    for (int n = 0; n < 10'000; ++n) {
      const auto& entry = listed[static_cast<size_t>(n)];
      REQUIRE(entry.id == id_of("wf-", n, 5));
      REQUIRE(entry.record == open_record("def-" + std::to_string(n % 7), n));
    }
    // 33 full pages and one of 100: the last page says there is no more, without an empty
    // page after it.
    CHECK(calls == 34);
  }

  TEST_CASE_TEMPLATE("each filter and their combinations return exactly the matching workflows",
                     Store, OnDisk, InMemory) {
    Store s;
    const auto model = load_varied(s.store());

    struct Case {
      const char* what;
      std::function<void(ListQuery&)> set;
      std::function<bool(const WorkflowRecord&)> expect;
    };
    using S = WorkflowStatus;
    const std::vector<Case> cases = {
        {"open", [](auto& q) { q.status = S::OPEN; }, [](auto& r) { return r.status == S::OPEN; }},
        {"closed", [](auto& q) { q.status = S::CLOSED; },
         [](auto& r) { return r.status == S::CLOSED; }},
        {"ended FAILED", [](auto& q) { q.final_state = "FAILED"; },
         [](auto& r) { return r.final_state == "FAILED"; }},
        {"closed and ended STOPPED",
         [](auto& q) {
           q.status = S::CLOSED;
           q.final_state = "STOPPED";
         },
         [](auto& r) { return r.final_state == "STOPPED"; }},
        {"definition def-2", [](auto& q) { q.definition_name = "def-2"; },
         [](auto& r) { return r.definition_name == "def-2"; }},
        {"created from 2000", [](auto& q) { q.created_from_us = 2'000; },
         [](auto& r) { return r.created_us >= 2'000; }},
        {"created before 1500", [](auto& q) { q.created_to_us = 1'500; },
         [](auto& r) { return r.created_us < 1'500; }},
        {"created in [1500, 2800)",
         [](auto& q) {
           q.created_from_us = 1'500;
           q.created_to_us = 2'800;
         },
         [](auto& r) { return r.created_us >= 1'500 && r.created_us < 2'800; }},
        {"closed, ended FAILED, def-1, created in [1500, 3500)",
         [](auto& q) {
           q.status = S::CLOSED;
           q.final_state = "FAILED";
           q.definition_name = "def-1";
           q.created_from_us = 1'500;
           q.created_to_us = 3'500;
         },
         [](auto& r) {
           return r.final_state == "FAILED" && r.definition_name == "def-1" &&
                  r.created_us >= 1'500 && r.created_us < 3'500;
         }},
        {"open, def-3, created before 2000",
         [](auto& q) {
           q.status = S::OPEN;
           q.definition_name = "def-3";
           q.created_to_us = 2'000;
         },
         [](auto& r) {
           return r.status == S::OPEN && r.definition_name == "def-3" && r.created_us < 2'000;
         }},
        {"closed by close(), def-0",
         [](auto& q) {
           q.status = S::CLOSED;
           q.definition_name = "def-0";
           q.created_to_us = 1'050;  // wf-000 (closed by close()) and wf-004 (ended FAILED)
         },
         [](auto& r) {
           return r.status == S::CLOSED && r.definition_name == "def-0" && r.created_us < 1'050;
         }},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      std::vector<WorkflowEntry> expected;
      for (const auto& entry : model) {
        if (c.expect(entry.record)) expected.push_back(entry);
      }
      // A filter that keeps everything or nothing would not show it filters.
      REQUIRE(!expected.empty());
      REQUIRE(expected.size() < model.size());
      for (size_t budget : {size_t{100'000}, size_t{13}}) {
        CAPTURE(budget);
        ListQuery query;
        c.set(query);
        query.limit = 7;
        query.scan_budget = budget;
        auto listed = list_all(s.store(), query);
        CHECK(ids(listed) == ids(expected));
        for (size_t i = 0; i < listed.size() && i < expected.size(); ++i) {
          CHECK(listed[i].record == expected[i].record);
        }
      }
    }

    ListQuery none;
    none.definition_name = "def-9";
    auto page = s.store().list_workflows(none);
    REQUIRE(page);
    CHECK(page->entries.empty());
    CHECK(page->next_cursor.empty());
  }

  TEST_CASE_TEMPLATE("a scan budget smaller than the gap between matches pages on to every match",
                     Store, OnDisk, InMemory) {
    Store s;
    std::vector<WorkflowEntry> written;
    std::vector<std::string> rare;
    for (int i = 0; i < 1'000; ++i) {
      const bool is_rare = i % 100 == 50;
      written.push_back({id_of("wf-", i, 4), open_record(is_rare ? "rare" : "common", i + 1)});
      if (is_rare) rare.push_back(written.back().id);
    }
    load(s.store(), written);
    ListQuery query;
    query.definition_name = "rare";
    query.limit = 5;

    SUBCASE("budget 30: pages are empty but the cursor moves on by the budget") {
      query.scan_budget = 30;
      auto first = s.store().list_workflows(query);
      REQUIRE(first);
      CHECK(first->entries.empty());
      CHECK(first->next_cursor == "wf-0029");  // the last id examined
      size_t calls = 0;
      CHECK(ids(list_all(s.store(), query, &calls)) == rare);
      CHECK(calls == 34);  // 33 budgets of 30 and the last 10 records
    }
    SUBCASE("budget 150: partial pages with a cursor") {
      query.scan_budget = 150;
      auto first = s.store().list_workflows(query);
      REQUIRE(first);
      CHECK(ids(first->entries) == std::vector<std::string>{"wf-0050"});
      CHECK(first->next_cursor == "wf-0149");
      CHECK(ids(list_all(s.store(), query)) == rare);
    }
    SUBCASE("the limit ends a page before the budget does, at the last match") {
      query.limit = 2;
      auto first = s.store().list_workflows(query);
      REQUIRE(first);
      CHECK(ids(first->entries) == std::vector<std::string>{"wf-0050", "wf-0150"});
      CHECK(first->next_cursor == "wf-0150");
      CHECK(ids(list_all(s.store(), query)) == rare);
    }
  }

  TEST_CASE_TEMPLATE("the cursor: from anywhere, and empty exactly at the end of the index", Store,
                     OnDisk, InMemory) {
    Store s;
    std::vector<WorkflowEntry> written;
    for (int i = 0; i < 10; ++i) written.push_back({id_of("wf-", i, 2), open_record("n", i + 1)});
    load(s.store(), written);

    ListQuery query;
    query.limit = 5;
    auto first = s.store().list_workflows(query);
    REQUIRE(first);
    CHECK(first->entries.size() == 5);
    CHECK(first->next_cursor == "wf-04");
    query.after = first->next_cursor;
    auto last = s.store().list_workflows(query);
    REQUIRE(last);
    CHECK(ids(last->entries) ==
          std::vector<std::string>{"wf-05", "wf-06", "wf-07", "wf-08", "wf-09"});
    CHECK(last->next_cursor.empty());  // the limit was reached on the last record

    // A cursor need not be a stored id: listing resumes at the next one that is.
    query.after = "wf-06x";
    auto between = s.store().list_workflows(query);
    REQUIRE(between);
    CHECK(ids(between->entries) == std::vector<std::string>{"wf-07", "wf-08", "wf-09"});
    CHECK(between->next_cursor.empty());
    query.after = "wf-09";
    auto past = s.store().list_workflows(query);
    REQUIRE(past);
    CHECK(past->entries.empty());
    CHECK(past->next_cursor.empty());
  }

  TEST_CASE_TEMPLATE("the final state of a CLOSED record survives close() and a restart", Store,
                     OnDisk, InMemory) {
    Store s;
    REQUIRE(s.store().append_wait("wf-a", {test::submitted_event()}, open_record("n", 1)));
    REQUIRE(s.store().append_wait("wf-b", {test::submitted_event()}, open_record("n", 2)));
    // As the workflow actor closes a workflow: an append whose record is CLOSED.
    REQUIRE(s.store().append_wait("wf-a", {test::sample_event(0, 2, 0)},
                                  closed_record("n", 1, "FAILED")));
    // Closing it again changes nothing; closing the other by close() records no final state.
    REQUIRE(s.store().close_wait("wf-a", 777));
    REQUIRE(s.store().close_wait("wf-b", 778));
    s.reopen();

    auto a = s.store().find_workflow("wf-a");
    REQUIRE(a);
    REQUIRE(*a);
    CHECK(**a == closed_record("n", 1, "FAILED"));
    auto b = s.store().find_workflow("wf-b");
    REQUIRE(b);
    REQUIRE(*b);
    CHECK((*b)->status == WorkflowStatus::CLOSED);
    CHECK((*b)->final_state.empty());

    ListQuery failed;
    failed.final_state = "FAILED";
    auto page = s.store().list_workflows(failed);
    REQUIRE(page);
    REQUIRE(ids(page->entries) == std::vector<std::string>{"wf-a"});
    CHECK(page->entries[0].record.final_state == "FAILED");
    failed.final_state = "SUCCESS";
    CHECK(s.store().list_workflows(failed)->entries.empty());
  }

  TEST_CASE_TEMPLATE("queries no page can answer are INVALID_ARGUMENT naming the field", Store,
                     OnDisk, InMemory) {
    Store s;
    REQUIRE(s.store().append_wait("wf", {test::submitted_event()}, open_record("n", 5)));
    struct Bad {
      const char* field;
      std::function<void(ListQuery&)> set;
    };
    const std::vector<Bad> bad = {
        {"limit is 0", [](auto& q) { q.limit = 0; }},
        {"scan_budget is 0", [](auto& q) { q.scan_budget = 0; }},
        {"created_to_us 10 is not after created_from_us 10",
         [](auto& q) {
           q.created_from_us = 10;
           q.created_to_us = 10;
         }},
        {"created_to_us 5 is not after created_from_us 10",
         [](auto& q) {
           q.created_from_us = 10;
           q.created_to_us = 5;
         }},
        {"final_state 'SUCCESS' only matches closed workflows",
         [](auto& q) {
           q.status = WorkflowStatus::OPEN;
           q.final_state = "SUCCESS";
         }},
    };
    for (const auto& b : bad) {
      CAPTURE(b.field);
      ListQuery query;
      b.set(query);
      auto page = s.store().list_workflows(query);
      REQUIRE_FALSE(page);
      CHECK(page.error().code == Errc::INVALID_ARGUMENT);
      CHECK(page.error().message.find(b.field) != std::string::npos);
    }
    // Either bound alone is fine, and so is a negative one.
    ListQuery one_bound;
    one_bound.created_to_us = 6;
    CHECK(s.store().list_workflows(one_bound)->entries.size() == 1);
    one_bound.created_to_us = 0;
    one_bound.created_from_us = -3;
    CHECK(s.store().list_workflows(one_bound)->entries.size() == 1);
  }
}
