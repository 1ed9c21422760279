// The lease page: mmap(MAP_SHARED | MAP_ANONYMOUS), so a fork shares it rather than copying it.
#include "runtime/process/lease.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <system_error>

namespace troupe::runtime {

Result<std::unique_ptr<Lease>> Lease::create() {
  void* page = ::mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    const int err = errno;
    return fail(Errc::OVERLOADED, "cannot map the lease page: " + std::generic_category().message(err));
  }
  auto* word = new (page) std::atomic<int64_t>(no_lease);
  return std::unique_ptr<Lease>(new Lease(word));
}

Lease::~Lease() { ::munmap(word_, sizeof(std::atomic<int64_t>)); }

bool Lease::set(std::chrono::steady_clock::time_point deadline) {
  // time_point::max() is no_lease: steady_clock counts int64 nanoseconds.
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  return ns < word_->exchange(ns, std::memory_order_acq_rel);
}

}  // namespace troupe::runtime
