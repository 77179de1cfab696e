#include "runtime/allocator.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit {

Buffer::~Buffer() { owner_->Release(ptr_, bytes_, stream_); }

size_t RoundAllocationSize(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kLargeThreshold = size_t{1} << 20;
  size_t unit = bytes > kLargeThreshold ? kLarge : kSmall;
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

CachingAllocator::CachingAllocator(hal::Backend* backend, Device device)
    : backend_(backend), device_(device) {}

CachingAllocator::~CachingAllocator() = default;  // process-lifetime; the driver reclaims memory

absl::StatusOr<std::shared_ptr<Buffer>> CachingAllocator::Allocate(size_t bytes,
                                                                   hal::Stream& stream) {
  if (bytes > (SIZE_MAX >> 2)) {  // rounding and the best-fit window below must not wrap
    return MemoryError(
        absl::StrCat("out of memory on ", device_.ToString(), ": requested ", bytes, " bytes"));
  }
  size_t size = RoundAllocationSize(bytes);
  void* ptr = nullptr;
  hal::Stream* owner = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocations;
    // Best fit among cached blocks no larger than twice the request, preferring this stream's.
    auto lo = free_.lower_bound(size), hi = free_.upper_bound(2 * size);
    auto pick = hi;
    for (auto it = lo; it != hi; ++it) {
      if (it->second.stream == &stream) {
        pick = it;
        break;
      }
      if (pick == hi) pick = it;
    }
    if (pick != hi) {
      size = pick->first;
      ptr = pick->second.ptr;
      owner = pick->second.stream;
      free_.erase(pick);
      ++stats_.num_cache_hits;
      Account(size);
    }
  }
  if (ptr != nullptr) {
    if (owner != &stream) {
      // Work queued on the owner stream may still touch the block: order this stream after it.
      absl::Status s = OrderAfter(*owner, stream);
      if (!s.ok()) {  // give the block back to its owner's cache, books as before
        std::lock_guard<std::mutex> lock(mu_);
        free_.emplace(size, Cached{ptr, owner});
        stats_.allocated_bytes -= static_cast<int64_t>(size);
        --stats_.active_blocks;
        return s;
      }
    }
    return std::make_shared<Buffer>(this, device_, ptr, size, &stream);
  }
  auto raw = backend_->RawAllocate(device_.index, size);
  if (!raw.ok() && raw.status().code() == absl::StatusCode::kResourceExhausted) {
    PGK_RETURN_IF_ERROR(EmptyCache());
    raw = backend_->RawAllocate(device_.index, size);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!raw.ok()) {
    if (raw.status().code() != absl::StatusCode::kResourceExhausted) return raw.status();
    return MemoryError(absl::StrCat("out of memory on ", device_.ToString(), ": requested ", bytes,
                                    " bytes; allocated ", stats_.allocated_bytes, ", reserved ",
                                    stats_.reserved_bytes, " (cached blocks already released)"));
  }
  ++stats_.num_driver_allocations;
  stats_.reserved_bytes += static_cast<int64_t>(size);
  Account(size);
  return std::make_shared<Buffer>(this, device_, *raw, size, &stream);
}

void CachingAllocator::Account(size_t size) {
  stats_.allocated_bytes += static_cast<int64_t>(size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  ++stats_.active_blocks;
}

void CachingAllocator::Release(void* ptr, size_t bytes, hal::Stream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.allocated_bytes -= static_cast<int64_t>(bytes);
  --stats_.active_blocks;
  free_.emplace(bytes, Cached{ptr, stream});
}

absl::Status CachingAllocator::OrderAfter(hal::Stream& first, hal::Stream& then) {
  PGK_ASSIGN_OR_RETURN(auto ev, backend_->CreateEvent(device_.index, false));
  PGK_RETURN_IF_ERROR(backend_->Record(*ev, first));
  return backend_->Wait(then, *ev);
}

absl::Status CachingAllocator::EmptyCache() {
  std::multimap<size_t, Cached> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
  }
  // Outside the lock: waiting on a CPU stream runs tasks that may free buffers (and so call
  // Release, which takes the lock). Work still queued on a block's stream may use it, so each
  // stream is drained first: through an event, which leaves the stream's own (sticky) errors to
  // whoever synchronizes it.
  absl::flat_hash_map<hal::Stream*, absl::Status> drained;
  for (auto& [size, block] : blocks) {
    if (drained.contains(block.stream)) continue;
    absl::Status s;
    auto ev = backend_->CreateEvent(device_.index, false);
    s = ev.status();
    if (s.ok()) s = backend_->Record(**ev, *block.stream);
    if (s.ok()) s = backend_->Synchronize(**ev);
    drained.emplace(block.stream, s);
  }
  absl::Status status;
  int64_t freed = 0, count = 0;
  std::multimap<size_t, Cached> kept;
  for (auto& [size, block] : blocks) {
    absl::Status s = drained[block.stream];
    if (s.ok()) s = backend_->RawFree(device_.index, block.ptr);
    if (s.ok()) {
      freed += static_cast<int64_t>(size);
      ++count;
    } else {
      kept.emplace(size, block);  // still ours: cached again rather than lost
      if (status.ok()) status = s;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  free_.merge(kept);
  stats_.reserved_bytes -= freed;
  stats_.num_driver_frees += count;
  return status;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pygpukit
