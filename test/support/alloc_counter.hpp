// Live heap bytes allocated through operator new, and their high-water mark. Linked only
// into test executables that replace the global operator new (alloc_counter.cpp).
#pragma once

#include <cstddef>

namespace troupe::test {

/// Bytes currently allocated through operator new.
size_t live_heap_bytes();
/// The most live bytes seen since the last reset_heap_peak().
size_t peak_heap_bytes();
/// Starts a new high-water mark at the current live bytes.
void reset_heap_peak();

}  // namespace troupe::test
