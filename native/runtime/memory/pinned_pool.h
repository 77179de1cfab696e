// The pinned host pool: page-locked host memory for DMA (transfer staging, spilled buffers,
// user arrays from gp.memory.pinned_empty). Size classes, a limit, and stream-ordered reuse: a
// block freed while copies may still read or write it is reused only after they finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/hal/backend.h"

namespace pygpukit {

/// Counters of the pinned pool.
struct PinnedStats {
  int64_t allocated_bytes = 0;  // held by users (class sizes)
  int64_t reserved_bytes = 0;   // page-locked from the driver
  int64_t peak_reserved_bytes = 0;
  int64_t limit_bytes = 0;
  int64_t num_allocations = 0;
  int64_t num_cache_hits = 0;
  int64_t num_driver_allocations = 0;
  int64_t num_driver_frees = 0;
};

/// Pinned host memory for one backend. Thread-safe.
class PinnedPool {
 public:
  /// `limit_bytes` bounds reserved pinned memory (0: none).
  PinnedPool(hal::Backend* backend, int64_t limit_bytes);
  ~PinnedPool();

  /// At least `bytes` of pinned memory (rounded to a size class: 4 KiB, then four classes per
  /// power of two). Cached blocks are reused once the copies that used them have finished;
  /// under the limit, idle cached blocks are released first; then MemoryError.
  absl::StatusOr<void*> Allocate(size_t bytes);
  /// Returns `ptr` to the pool. Work already queued on `in_use_on` may still access it: the
  /// block is reused only after events recorded there now have completed.
  absl::Status Free(void* ptr, absl::Span<hal::Stream* const> in_use_on = {});
  /// True when [ptr, ptr + bytes) lies in one live block of this pool.
  bool Contains(const void* ptr, size_t bytes) const;
  /// Size class of a live block (0 when `ptr` is not one).
  size_t BlockSize(const void* ptr) const;

  absl::Status EmptyCache();
  absl::Status SetLimit(int64_t bytes);
  PinnedStats stats() const;
  hal::Backend* backend() const { return backend_; }

 private:
  struct Cached {
    void* ptr;
    std::vector<std::shared_ptr<hal::Event>> events;  // the block is free once these complete
  };
  bool Ready(Cached& c);  // requires mu_
  absl::Status ReleaseIdle(size_t wanted, std::unique_lock<std::mutex>& lock);

  hal::Backend* backend_;
  mutable std::mutex mu_;
  std::multimap<size_t, Cached> free_;  // by class size
  std::map<const char*, size_t> live_;  // base -> class size
  PinnedStats stats_;
};

/// Size class a pinned request is rounded up to.
size_t PinnedSizeClass(size_t bytes);

}  // namespace pygpukit
