// The pool's waiting and releasing: event fences that make other streams' frees reusable,
// blocks pending on recorded streams, release of fully free segments to the driver (LRU), the
// process limit, and forgetting a stream. Waits always run with the pool's lock released.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/memory_pool_internal.h"

namespace pygpukit {

void MemoryPool::UpdateFences(StreamState& ss) {
  while (!ss.fences.empty()) {
    auto done = backend_->Query(*ss.fences.front().event);
    if (!done.ok() || !*done) break;
    ss.safe_seq = ss.fences.front().seq;
    ss.fences.pop_front();
  }
  // Fence the frees not yet covered, so that a later attempt can take them.
  uint64_t covered = ss.fences.empty() ? ss.safe_seq : ss.fences.back().seq;
  if (ss.stream != nullptr && ss.free_count > covered) {
    auto ev = backend_->CreateEvent(device_.index, false);
    if (ev.ok() && backend_->Record(**ev, *ss.stream).ok()) {
      ss.fences.push_back({std::shared_ptr<hal::Event>(std::move(*ev)), ss.free_count});
    }
  }
}

bool MemoryPool::WaitForFences(std::unique_lock<std::mutex>& lock) {
  // Host-waits for every stream's latest fence: afterwards every cached block is reusable by
  // any stream. Events are waited on outside the lock (a CPU stream's tasks free buffers).
  struct Wait {
    StreamState* ss;
    std::shared_ptr<hal::Event> event;
    uint64_t seq;
  };
  std::vector<Wait> waits;
  for (auto& ss : streams_) {
    if (ss->free_count <= ss->safe_seq) continue;
    UpdateFences(*ss);
    if (ss->fences.empty()) continue;
    waits.push_back({ss.get(), ss->fences.back().event, ss->fences.back().seq});
  }
  if (waits.empty()) return false;
  lock.unlock();
  std::vector<bool> ok;
  for (auto& w : waits) ok.push_back(backend_->Synchronize(*w.event).ok());
  lock.lock();
  bool any = false;
  for (size_t i = 0; i < waits.size(); ++i) {
    if (!ok[i]) continue;
    // The stream may have been forgotten meanwhile; only states still listed are touched.
    for (auto& ss : streams_) {
      if (ss.get() != waits[i].ss) continue;
      ss->safe_seq = std::max(ss->safe_seq, waits[i].seq);
      while (!ss->fences.empty() && ss->fences.front().seq <= ss->safe_seq) ss->fences.pop_front();
      any = true;
    }
  }
  return any;
}

void MemoryPool::WaitForPending(std::unique_lock<std::mutex>& lock) {
  // Blocks freed with uses on other streams: wait for those uses, then cache them normally.
  std::vector<std::shared_ptr<hal::Event>> events;
  for (PoolBlock* b : pending_) events.insert(events.end(), b->events.begin(), b->events.end());
  if (events.empty()) return;
  lock.unlock();
  for (auto& e : events) (void)backend_->Synchronize(*e);
  lock.lock();
  ProcessPending();
}

void MemoryPool::ProcessPending() {
  for (size_t i = 0; i < pending_.size();) {
    PoolBlock* b = pending_[i];
    bool done = true;
    for (auto& ev : b->events) {
      auto q = backend_->Query(*ev);
      if (!q.ok() || !*q) {
        done = false;
        break;
      }
    }
    if (!done) {
      ++i;
      continue;
    }
    pending_[i] = pending_.back();
    pending_.pop_back();
    b->events.clear();
    b->pending = false;
    FreeBlock(b);
  }
}

bool MemoryPool::ReleaseSegments(std::unique_lock<std::mutex>& lock, size_t wanted, bool all,
                                 absl::Status* error) {
  ProcessPending();
  CoalesceSmall();  // also: no dirty segment may be deleted below
  std::vector<Segment*> idle;
  for (Segment* seg : segments_) {
    bool free = seg->allocated_blocks == 0;
    for (PoolBlock* b = seg->first; free && b != nullptr; b = b->next) free = !b->pending;
    if (free) idle.push_back(seg);
  }
  if (idle.empty()) return false;
  std::sort(idle.begin(), idle.end(),
            [](const Segment* a, const Segment* b) { return a->last_free < b->last_free; });
  if (!all) {
    size_t total = 0, n = 0;
    while (n < idle.size() && total < wanted) total += idle[n++]->size;
    idle.resize(n);
  }
  // Take them out of the caches (a segment's blocks may sit in several streams' caches); work
  // queued before their frees must finish before the driver gets the memory back, so each
  // owning stream is drained through an event.
  std::vector<hal::Stream*> streams;
  for (Segment* seg : idle) {
    segments_.erase(seg);
    // No longer reserved from here on (the books never count memory the driver has back).
    stats_.reserved_bytes -= static_cast<int64_t>(seg->size);
    --stats_.segments;
    for (PoolBlock* b = seg->first; b != nullptr; b = b->next) {
      EraseFree(b);
      if (b->owner->stream != nullptr && b->free_seq > b->owner->safe_seq &&
          std::find(streams.begin(), streams.end(), b->owner->stream) == streams.end()) {
        streams.push_back(b->owner->stream);
      }
    }
  }
  lock.unlock();
  absl::Status status;
  for (hal::Stream* s : streams) {
    auto ev = backend_->CreateEvent(device_.index, false);
    absl::Status st = ev.status();
    if (st.ok()) st = backend_->Record(**ev, *s);
    if (st.ok()) st = backend_->Synchronize(**ev);
    if (!st.ok() && status.ok()) status = st;
  }
  std::vector<absl::Status> freed(idle.size());
  if (status.ok()) {
    for (size_t i = 0; i < idle.size(); ++i) {
      freed[i] = backend_->RawFree(device_.index, idle[i]->base);
    }
  }
  lock.lock();
  bool any = false;
  for (size_t i = 0; i < idle.size(); ++i) {
    Segment* seg = idle[i];
    if (status.ok() && freed[i].ok()) {
      ++stats_.num_driver_frees;
      ++stats_.num_evictions;
      for (PoolBlock* b = seg->first; b != nullptr;) {
        PoolBlock* n = b->next;
        RecycleBlock(b);
        b = n;
      }
      delete seg;
      any = true;
    } else {  // still ours: cached again rather than lost
      segments_.insert(seg);
      stats_.reserved_bytes += static_cast<int64_t>(seg->size);
      ++stats_.segments;
      for (PoolBlock* b = seg->first; b != nullptr; b = b->next) InsertFree(b);
      if (error->ok()) *error = status.ok() ? freed[i] : status;
    }
  }
  return any;
}

absl::Status MemoryPool::EmptyCache() {
  std::unique_lock<std::mutex> lock(mu_);
  WaitForFences(lock);
  WaitForPending(lock);
  absl::Status error;
  ReleaseSegments(lock, 0, true, &error);
  return error;
}

absl::Status MemoryPool::SetLimit(int64_t bytes) {
  if (bytes < 0) return ValueError(absl::StrCat("set_limit: negative limit ", bytes));
  std::unique_lock<std::mutex> lock(mu_);
  stats_.limit_bytes = bytes;
  if (bytes > 0 && stats_.reserved_bytes > bytes) {
    absl::Status error;
    ReleaseSegments(lock, static_cast<size_t>(stats_.reserved_bytes - bytes), false, &error);
    return error;
  }
  return absl::OkStatus();
}

absl::Status MemoryPool::ForgetStream(hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(backend_->Synchronize(stream));
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i]->stream != &stream) continue;
    StreamState& ss = *streams_[i];
    // Its work has finished: its cached blocks are safe for everyone.
    for (FreeSet* set : {&ss.small, &ss.large}) {
      while (!set->empty()) {
        PoolBlock* b = *set->begin();
        EraseFree(b);
        b->owner = neutral_.get();
        b->free_seq = 0;
        InsertFree(b);
      }
    }
    for (Segment* seg : segments_) {
      for (PoolBlock* b = seg->first; b != nullptr; b = b->next) {
        if (b->owner == &ss) b->owner = neutral_.get();
      }
    }
    streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  return absl::OkStatus();
}

}  // namespace pygpukit
