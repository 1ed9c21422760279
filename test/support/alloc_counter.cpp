// Replaces the global operator new/delete (and so counts RocksDB's allocations too) to track
// live bytes with malloc_usable_size. Aligned and nothrow forms are left to the library,
// which pairs them consistently.
#include "test/support/alloc_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> live{0};
std::atomic<size_t> peak{0};

void* counted_alloc(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  size_t now = live.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) +
               malloc_usable_size(p);
  size_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  return p;
}

void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  live.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(size_t size) { return counted_alloc(size); }
void* operator new[](size_t size) { return counted_alloc(size); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }

namespace troupe::test {

size_t live_heap_bytes() { return live.load(); }
size_t peak_heap_bytes() { return peak.load(); }
void reset_heap_peak() { peak.store(live.load()); }

}  // namespace troupe::test
