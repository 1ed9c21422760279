# Vocabulary shared by every troupe contract.
@0xd1ac7b8f935cfe56;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

enum ErrorCode {
  # Mirrors troupe::Errc (schema/errc.hpp) value for value.
  none @0;               # never sent; keeps the values equal to Errc, which starts at 1
  invalidArgument @1;
  notFound @2;
  alreadyExists @3;
  notAllowedInState @4;
  timedOut @5;
  cancelled @6;
  overloaded @7;
  disconnected @8;
  unimplemented @9;
  unavailable @10;
  corruption @11;
  internal @12;
}

struct Error {
  # A domain failure carried as a value in RPC results.
  code @0 :ErrorCode;
  message @1 :Text;      # what failed, where, and what to do about it
}

enum ActorKind {
  # The kind of actor an event belongs to.
  workflow @0;
  task @1;
  session @2;
  worker @3;
}
