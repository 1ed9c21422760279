#include <doctest/doctest.h>

#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include "storage/codec.hpp"
#include "test/support/sample_events.hpp"

using namespace troupe;
using namespace troupe::storage;

TEST_SUITE("storage.codec") {
  TEST_CASE("a composed event decodes to its header and body") {
    auto event = test::sample_event(3, 17, 1);
    auto packed = compose_event(42, event);
    REQUIRE(packed);
    auto decoded = DecodedEvent::decode(*packed);
    REQUIRE(decoded);
    auto reader = decoded->get();
    CHECK(reader.getSequence() == 42);
    CHECK(reader.getAttempt() == 17);
    CHECK(std::string(reader.getActorId().cStr()) == "writer-3/1");
    CHECK(test::is_intact_sample(reader));
  }

  TEST_CASE("a body that is not an EventBody message is refused") {
    NewEvent event = test::sample_event(0, 0, 0);
    event.body = "not a capnp message";
    auto packed = compose_event(1, event);
    REQUIRE_FALSE(packed);
    CHECK(packed.error().code == Errc::INVALID_ARGUMENT);

    event.body = std::string(16, '\xff');  // word-sized, but a nonsense segment table
    packed = compose_event(1, event);
    REQUIRE_FALSE(packed);
    CHECK(packed.error().code == Errc::INVALID_ARGUMENT);
    CHECK(packed.error().message.starts_with("malformed event body"));
  }

  TEST_CASE("truncated packed events are refused, not misread") {
    auto packed = compose_event(1, test::sample_event(1, 2, 3));
    REQUIRE(packed);
    for (size_t cut : {size_t{0}, size_t{1}, packed->size() / 2, packed->size() - 1}) {
      CAPTURE(cut);
      auto decoded = DecodedEvent::decode(std::string_view(*packed).substr(0, cut));
      CHECK_FALSE(decoded);
    }
  }

  TEST_CASE("index records round-trip") {
    WorkflowRecord workflow{WorkflowStatus::CLOSED, "train-model", std::string("\x01\x02", 2),
                            10, 20, "FAILED", ""};
    auto decoded = decode_workflow_record(encode_workflow_record(workflow));
    REQUIRE(decoded);
    CHECK(*decoded == workflow);
    WorkflowRecord paused{WorkflowStatus::OPEN, "train-model", "d", 10, 0, "", "PAUSED"};
    auto decoded_paused = decode_workflow_record(encode_workflow_record(paused));
    REQUIRE(decoded_paused);
    CHECK(*decoded_paused == paused);

    WorkerRecord worker;
    worker.worker_id = "wkr-0123456789abcdef";
    worker.hostname = "host-a";
    worker.resource_id = "gpu0";
    worker.first_registered_us = 5;
    worker.last_registered_us = 6;
    worker.pid = 4242;
    worker.instance_id = "instance-2";
    worker.task_lists = {{"cpu", 4}, {"gpu", 2}};
    worker.last_seen_us = 7;
    worker.registrations = 3;
    worker.status = "STARTED";
    auto decoded_worker = decode_worker_record(encode_worker_record(worker));
    REQUIRE(decoded_worker);
    CHECK(*decoded_worker == worker);
    CHECK_FALSE(decode_worker_record(""));
  }

  TEST_CASE("a worker record written before the record kept counters and status reads them as defaults") {
    // The bytes an older build wrote: only the first five fields.
    capnp::MallocMessageBuilder message;
    auto old = message.initRoot<schema::WorkerRecord>();
    old.setWorkerId("wkr-0123456789abcdef");
    old.setHostname("host-a");
    old.setResourceId("gpu0");
    old.setFirstRegisteredUs(5);
    old.setLastRegisteredUs(6);
    kj::VectorOutputStream out;
    capnp::writePackedMessage(out, message);
    auto bytes = out.getArray();
    auto decoded = decode_worker_record(std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
    REQUIRE(decoded);
    CHECK(decoded->worker_id == "wkr-0123456789abcdef");
    CHECK(decoded->last_registered_us == 6);
    CHECK(decoded->registrations == 0);
    CHECK(decoded->task_lists.empty());
    CHECK(decoded->status.empty());
  }
}
