// Device memory for arrays and temporaries. Every allocation in the library goes through an
// Allocator obtained from the Runtime; this caching allocator keeps freed blocks per stream and
// reuses them stream-ordered (the memory-pool work replaces it behind this interface).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/hal/backend.h"

namespace pygpukit {

class Allocator;

/// A block of device memory. Destroying the last reference returns it to its allocator, which
/// may reuse it for work on the same stream at once (stream order keeps that safe).
class Buffer {
 public:
  Buffer(Allocator* owner, Device device, void* ptr, size_t bytes, hal::Stream* stream)
      : owner_(owner), device_(device), ptr_(ptr), bytes_(bytes), stream_(stream) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device device() const { return device_; }
  /// Base address (device address on CUDA, host address on CPU).
  void* data() const { return ptr_; }
  size_t size() const { return bytes_; }
  /// Stream the block was allocated on; freed blocks return to that stream's cache.
  hal::Stream* stream() const { return stream_; }

 private:
  Allocator* owner_;
  Device device_;
  void* ptr_;
  size_t bytes_;
  hal::Stream* stream_;
};

/// Counters of one allocator.
struct MemoryStats {
  int64_t allocated_bytes = 0;  // held by live buffers (rounded sizes)
  int64_t reserved_bytes = 0;   // obtained from the driver (live + cached)
  int64_t peak_allocated_bytes = 0;
  int64_t active_blocks = 0;
  int64_t num_allocations = 0;
  int64_t num_cache_hits = 0;
  int64_t num_driver_allocations = 0;
  int64_t num_driver_frees = 0;
};

/// Allocation interface; one instance per device.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// A buffer of at least `bytes` bytes for use on `stream`.
  virtual absl::StatusOr<std::shared_ptr<Buffer>> Allocate(size_t bytes, hal::Stream& stream) = 0;
  /// Returns cached free blocks to the driver.
  virtual absl::Status EmptyCache() = 0;
  virtual MemoryStats stats() const = 0;

 protected:
  friend class Buffer;
  virtual void Release(void* ptr, size_t bytes, hal::Stream* stream) = 0;
};

/// Caching allocator: sizes rounded to 512 bytes (2 MiB above 1 MiB); freed blocks cached per
/// stream and reused on that stream at once, or on another stream after it waits on an event
/// recorded on the owning stream. Under out-of-memory the cache is released and the request
/// retried before failing with MemoryError.
class CachingAllocator final : public Allocator {
 public:
  CachingAllocator(hal::Backend* backend, Device device);
  ~CachingAllocator() override;

  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(size_t bytes, hal::Stream& stream) override;
  absl::Status EmptyCache() override;
  MemoryStats stats() const override;

 private:
  void Release(void* ptr, size_t bytes, hal::Stream* stream) override;
  void Account(size_t size);  // requires mu_
  // Makes later work on `then` wait for the work queued on `first` so far.
  absl::Status OrderAfter(hal::Stream& first, hal::Stream& then);

  struct Cached {
    void* ptr;
    hal::Stream* stream;
  };
  hal::Backend* backend_;
  Device device_;
  mutable std::mutex mu_;
  std::multimap<size_t, Cached> free_;  // by rounded size
  MemoryStats stats_;
};

/// Size an allocation request is rounded up to.
size_t RoundAllocationSize(size_t bytes);

}  // namespace pygpukit
