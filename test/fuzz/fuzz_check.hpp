// What a fuzz target does when production code breaks a promise its contract makes (a parser
// that accepts and refuses the same text, a spec whose indexes point nowhere): say which, and
// abort, so libFuzzer saves the input as it does for a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#define TROUPE_FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "%s:%d: broken promise: %s (%s)\n", __FILE__, __LINE__, what, #cond); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)
