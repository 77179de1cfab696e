#include "runtime/memory/pinned_pool.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"

namespace pygpukit {

size_t PinnedSizeClass(size_t bytes) {
  constexpr size_t kMin = 4096;
  if (bytes <= kMin) return kMin;
  // Four classes per power of two: at most 25% (12.5% on average) above the request.
  const int top = 63 - std::countl_zero(bytes - 1);  // floor(log2(bytes - 1))
  const size_t step = size_t{1} << (top - 2);
  return (bytes + step - 1) / step * step;
}

PinnedPool::PinnedPool(hal::Backend* backend, int64_t limit_bytes) : backend_(backend) {
  stats_.limit_bytes = limit_bytes;
}

PinnedPool::~PinnedPool() {
  for (auto& [size, c] : free_) (void)backend_->RawFreeHost(c.ptr);
}

bool PinnedPool::Ready(Cached& c) {
  while (!c.events.empty()) {
    auto done = backend_->Query(*c.events.back());
    if (!done.ok() || !*done) return false;
    c.events.pop_back();
  }
  return true;
}

absl::StatusOr<void*> PinnedPool::Allocate(size_t bytes) {
  if (bytes > (SIZE_MAX >> 2)) {
    return MemoryError(absl::StrCat("pinned: cannot allocate ", bytes, " bytes"));
  }
  const size_t size = PinnedSizeClass(bytes);
  std::unique_lock<std::mutex> lock(mu_);
  ++stats_.num_allocations;
  for (auto it = free_.find(size); it != free_.end() && it->first == size; ++it) {
    if (!Ready(it->second)) continue;
    void* p = it->second.ptr;
    free_.erase(it);
    live_[static_cast<const char*>(p)] = size;
    stats_.allocated_bytes += static_cast<int64_t>(size);
    ++stats_.num_cache_hits;
    return p;
  }
  if (stats_.limit_bytes > 0 &&
      stats_.reserved_bytes + static_cast<int64_t>(size) > stats_.limit_bytes) {
    auto over = [&] {
      return stats_.reserved_bytes + static_cast<int64_t>(size) - stats_.limit_bytes;
    };
    PGK_RETURN_IF_ERROR(ReleaseIdle(static_cast<size_t>(over()), lock));
    if (over() > 0) {
      // Cached blocks whose copies are still in flight will be free in moments: wait for
      // them (outside the lock) rather than fail.
      std::vector<std::shared_ptr<hal::Event>> events;
      for (auto& [sz, c] : free_) events.insert(events.end(), c.events.begin(), c.events.end());
      if (!events.empty()) {
        lock.unlock();
        for (auto& e : events) (void)backend_->Synchronize(*e);
        lock.lock();
        PGK_RETURN_IF_ERROR(ReleaseIdle(static_cast<size_t>(std::max<int64_t>(over(), 0)), lock));
      }
    }
    if (over() > 0) {
      return MemoryError(absl::StrCat(
          "pinned: out of pinned host memory: requested ", FormatBytes(static_cast<int64_t>(bytes)),
          "; limit ", FormatBytes(stats_.limit_bytes), ", in use ",
          FormatBytes(stats_.allocated_bytes), ", reserved ", FormatBytes(stats_.reserved_bytes),
          " (raise PYGPUKIT_PINNED_LIMIT or gp.memory.set_pinned_limit)"));
    }
  }
  // Counted as reserved during the unlocked driver call: concurrent callers cannot overshoot.
  stats_.reserved_bytes += static_cast<int64_t>(size);
  lock.unlock();
  auto raw = backend_->RawAllocateHost(size);
  if (!raw.ok() && raw.status().code() == absl::StatusCode::kResourceExhausted) {
    lock.lock();
    absl::Status s = ReleaseIdle(SIZE_MAX, lock);
    lock.unlock();
    if (s.ok()) raw = backend_->RawAllocateHost(size);
  }
  lock.lock();
  if (!raw.ok()) {
    stats_.reserved_bytes -= static_cast<int64_t>(size);
    return raw.status();
  }
  live_[static_cast<const char*>(*raw)] = size;
  stats_.allocated_bytes += static_cast<int64_t>(size);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  ++stats_.num_driver_allocations;
  return *raw;
}

absl::Status PinnedPool::Free(void* ptr, absl::Span<hal::Stream* const> in_use_on) {
  if (ptr == nullptr) return absl::OkStatus();
  Cached c{ptr, {}};
  absl::Status status;
  for (hal::Stream* s : in_use_on) {
    auto ev = backend_->CreateEvent(s->device().index, false);
    absl::Status st = ev.status();
    if (st.ok()) st = backend_->Record(**ev, *s);
    if (st.ok()) {
      c.events.push_back(std::shared_ptr<hal::Event>(std::move(*ev)));
    } else {
      (void)backend_->Synchronize(*s);  // cannot fence: wait rather than risk reuse
      if (status.ok()) status = st;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(static_cast<const char*>(ptr));
  if (it == live_.end()) {
    return ValueError("pinned: freeing memory that is not a live pinned-pool block");
  }
  const size_t size = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(size);
  free_.emplace(size, std::move(c));
  return absl::OkStatus();
}

absl::Status PinnedPool::ReleaseIdle(size_t wanted, std::unique_lock<std::mutex>& lock) {
  // Largest idle blocks first: fewest driver calls for the bytes wanted.
  std::vector<std::pair<size_t, void*>> release;
  size_t total = 0;
  for (auto it = free_.end(); it != free_.begin() && total < wanted;) {
    --it;
    if (!Ready(it->second)) continue;
    total += it->first;
    release.emplace_back(it->first, it->second.ptr);
    it = free_.erase(it);
  }
  lock.unlock();
  absl::Status status;
  std::vector<bool> ok;
  for (auto& [size, p] : release) {
    absl::Status s = backend_->RawFreeHost(p);
    ok.push_back(s.ok());
    if (!s.ok() && status.ok()) status = s;
  }
  lock.lock();
  for (size_t i = 0; i < release.size(); ++i) {
    if (ok[i]) {
      stats_.reserved_bytes -= static_cast<int64_t>(release[i].first);
      ++stats_.num_driver_frees;
    } else {
      free_.emplace(release[i].first, Cached{release[i].second, {}});
    }
  }
  return status;
}

bool PinnedPool::Contains(const void* ptr, size_t bytes) const {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.upper_bound(p);
  if (it == live_.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

size_t PinnedPool::BlockSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(static_cast<const char*>(ptr));
  return it == live_.end() ? 0 : it->second;
}

absl::Status PinnedPool::EmptyCache() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<hal::Event>> events;
  for (auto& [size, c] : free_) events.insert(events.end(), c.events.begin(), c.events.end());
  lock.unlock();
  for (auto& e : events) (void)backend_->Synchronize(*e);
  lock.lock();
  return ReleaseIdle(SIZE_MAX, lock);
}

absl::Status PinnedPool::SetLimit(int64_t bytes) {
  if (bytes < 0) return ValueError(absl::StrCat("set_pinned_limit: negative limit ", bytes));
  std::unique_lock<std::mutex> lock(mu_);
  stats_.limit_bytes = bytes;
  if (bytes > 0 && stats_.reserved_bytes > bytes) {
    return ReleaseIdle(static_cast<size_t>(stats_.reserved_bytes - bytes), lock);
  }
  return absl::OkStatus();
}

PinnedStats PinnedPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pygpukit
