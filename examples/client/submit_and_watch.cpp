// A program that uses troupe through its C++ client library: submits a workflow definition,
// prints its history as it is recorded, and exits with the workflow's outcome.
//
//   submit_and_watch DEFINITION.json [HOST:PORT]     (default 127.0.0.1:7700)
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "runtime/client/gateway_client.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: submit_and_watch DEFINITION.json [HOST:PORT]\n";
    return 2;
  }
  std::ifstream file(argv[1]);
  if (!file) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::stringstream definition;
  definition << file.rdbuf();
  const std::string address = argc > 2 ? argv[2] : "127.0.0.1:7700";
  const auto colon = address.rfind(':');
  const std::string host = address.substr(0, colon);
  const auto port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));

  auto client = troupe::client::GatewayClient::connect(host, port);
  if (!client) {
    std::cerr << client.error().message << "\n";
    return 3;
  }
  // No id given: the scheduler makes one up. The answer comes once the submission is durable.
  auto id = (*client)->start({definition.str(), R"({"requested_by": "submit_and_watch"})", "", ""});
  if (!id) {
    std::cerr << id.error().message << "\n";
    return 2;
  }
  std::cout << "started " << *id << "\n";

  // Every event of its history, live, until the workflow closes. A program that loses the
  // connection watches again from the sequence after the last one it printed.
  auto last = (*client)->watch(*id, 1, [](const troupe::client::WatchedEvent& e) {
    std::cout << "  " << e.sequence << " " << e.actor_kind << " " << e.actor_id << ": " << e.kind << "\n";
    return true;  // false would stop watching
  });
  if (!last) {
    std::cerr << last.error().message << "\n";
    return 3;
  }
  auto ended = (*client)->result(*id, std::chrono::seconds(10));
  if (!ended) {
    std::cerr << ended.error().message << "\n";
    return 1;
  }
  std::cout << *id << " " << ended->state << (ended->detail.empty() ? "" : ": " + ended->detail) << "\n";
  return ended->state == "SUCCESS" ? 0 : 1;
}
