// A process for the store's crash tests.
//   store_child append DIR   appends from 4 threads forever; prints "ack WORKFLOW FIRST COUNT"
//                            once each append is durable, so a parent that kills it with
//                            SIGKILL knows what must have survived
//   store_child hold DIR     opens the store, prints "ready", keeps it open until stdin closes
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/rocks_history_store.hpp"
#include "test/support/sample_events.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

int append_forever(HistoryStore& store) {
  std::mutex out;
  std::vector<std::thread> writers;
  for (uint32_t t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      const std::string workflow = "wf-" + std::to_string(t);
      // A history begins with its submission (made by the first round); the appends under
      // test follow it.
      auto last = store.last_sequence(workflow);
      if (!last) {
        std::fprintf(stderr, "reading failed: %s\n", last.error().to_string().c_str());
        std::exit(1);
      }
      if (auto submitted = *last > 0 ? Result<AppendReceipt>(AppendReceipt{})
                                     : store.append_wait(workflow, {test::submitted_event()});
          !submitted) {
        std::fprintf(stderr, "append failed: %s\n", submitted.error().to_string().c_str());
        std::exit(1);
      }
      for (uint32_t i = 0; i < 1'000'000; ++i) {
        std::vector<NewEvent> events;
        for (uint32_t e = 0; e <= i % 3; ++e) events.push_back(test::sample_event(t, i, e));
        auto receipt = store.append_wait(
            workflow, std::move(events),
            WorkflowRecord{WorkflowStatus::OPEN, "crash-test", "", 1, 0, "", ""});
        if (!receipt) {
          std::fprintf(stderr, "append failed: %s\n", receipt.error().to_string().c_str());
          std::exit(1);
        }
        std::lock_guard lock(out);
        std::printf("ack %s %llu %u\n", workflow.c_str(),
                    static_cast<unsigned long long>(receipt->first_sequence), receipt->count);
        std::fflush(stdout);
      }
    });
  }
  for (auto& w : writers) w.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s append|hold DIR\n", argv[0]);
    return 2;
  }
  auto store = RocksHistoryStore::open(argv[2]);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().to_string().c_str());
    return 1;
  }
  if (std::strcmp(argv[1], "append") == 0) return append_forever(**store);
  if (std::strcmp(argv[1], "hold") == 0) {
    std::printf("ready\n");
    std::fflush(stdout);
    std::string ignored;
    while (std::getline(std::cin, ignored)) {
    }
    return 0;
  }
  std::fprintf(stderr, "unknown mode '%s'\n", argv[1]);
  return 2;
}
