// The pool's allocation and free paths: the caches of each stream, best fit, splitting and
// coalescing, growth from the driver and the pressure loop. Waiting and releasing live in
// memory_release.cc, spill and page-in in memory_spill.cc, quotas and size parsing in
// memory_limits.cc, the buffer handle and residency pins in buffer.cc.
#include "runtime/memory/memory_pool.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/memory/memory_pool_internal.h"
#include "runtime/memory/recycling_allocator.h"
#include "runtime/memory/transfer.h"

namespace pygpukit {

namespace {

bool IsOutOfMemory(const absl::Status& s) {
  return s.code() == absl::StatusCode::kResourceExhausted;
}

}  // namespace

// ---- sizes ----

size_t RoundAllocationSize(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
}

size_t MemoryPool::SegmentSize(size_t size, bool small) const {
  if (small) return options_.small_segment;
  // Fast: mid-sized requests share one segment so that they do not each cost a driver call.
  if (options_.policy == PoolPolicy::kFast && size <= options_.mid_segment / 2) {
    return options_.mid_segment;
  }
  const size_t g = options_.large_granularity;
  return (size + g - 1) / g * g;
}

// ---- the pool ----

MemoryPool::MemoryPool(hal::Backend* backend, Device device, PoolOptions options)
    : backend_(backend), device_(device), options_(options) {
  neutral_ = std::make_unique<StreamState>();
  neutral_->safe_seq = UINT64_MAX;
  stats_.limit_bytes = options_.limit_bytes;
  // The tracer is made here, not on a first record under mu_ (it calibrates its clock).
}

MemoryPool::~MemoryPool() {
  // Live buffers would point at freed memory; the runtime's pools live for the whole process.
  for (Segment* seg : segments_) {
    if (seg->allocated_blocks == 0) (void)backend_->RawFree(device_.index, seg->base);
    for (PoolBlock* b = seg->first; b != nullptr;) {
      PoolBlock* n = b->next;
      delete b;
      b = n;
    }
    delete seg;
  }
  for (PoolBlock* b : spare_blocks_) delete b;
}

MemoryPool::StreamState& MemoryPool::StateFor(hal::Stream* stream) {
  for (auto& s : streams_) {
    if (s->stream == stream) return *s;
  }
  streams_.push_back(std::make_unique<StreamState>());
  streams_.back()->stream = stream;
  return *streams_.back();
}

PoolBlock* MemoryPool::NewBlock() {
  if (spare_blocks_.empty()) return new PoolBlock();
  PoolBlock* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void MemoryPool::RecycleBlock(PoolBlock* b) {
  auto node = std::move(b->node);
  b->uses.clear();
  b->events.clear();
  *b = PoolBlock();
  b->node = std::move(node);  // keep the set node for the next insertion
  spare_blocks_.push_back(b);
}

void MemoryPool::InsertFree(PoolBlock* b) {
  FreeSet& set = b->owner->set(b->segment->small);
  if (b->node.empty()) {
    set.insert(b);
  } else {
    b->node.value() = b;
    set.insert(std::move(b->node));
  }
}

void MemoryPool::EraseFree(PoolBlock* b) {
  FreeSet& set = b->owner->set(b->segment->small);
  auto it = set.find(b);
  b->node = set.extract(it);
}

int64_t MemoryPool::QuotaCharge(const Buffer& buffer) {
  return static_cast<int64_t>(RoundAllocationSize(buffer.requested_));
}

void MemoryPool::Account(int64_t allocated_delta, int64_t requested_delta, int64_t blocks_delta) {
  stats_.allocated_bytes += allocated_delta;
  stats_.requested_bytes += requested_delta;
  stats_.active_blocks += blocks_delta;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
}

PoolBlock* MemoryPool::Split(PoolBlock* b, size_t size, bool small) {
  // Large-pool remainders under 1 MiB are left in the block: they could serve only small
  // requests, which have their own segments.
  const size_t min_rest = small ? kPoolAlignment : options_.small_max;
  if (b->size - size >= min_rest) {
    PoolBlock* rest = NewBlock();
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->segment = b->segment;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    rest->owner = b->owner;
    rest->free_seq = b->free_seq;
    b->size = size;
    InsertFree(rest);
  }
  return b;
}

bool MemoryPool::Fits(const PoolBlock* b, size_t size, bool small) const {
  // Compact: a large request does not split a much larger cached block (the rest would be a
  // hole pinned by the request's lifetime); it gets an exact segment instead.
  return small || relaxed_fit_ || options_.policy != PoolPolicy::kCompact ||
         b->size <= size + options_.compact_fit_slack;
}

PoolBlock* MemoryPool::TakeFree(StreamState& ss, size_t size, bool small) {
  FreeSet& set = ss.set(small);
  PoolBlock key;
  key.size = size;
  auto it = set.lower_bound(&key);
  if (it == set.end() || !Fits(*it, size, small)) return nullptr;
  PoolBlock* b = *it;
  b->node = set.extract(it);
  return Split(b, size, small);
}

PoolBlock* MemoryPool::Steal(StreamState& ss, size_t size, bool small) {
  auto try_state = [&](StreamState& other) -> PoolBlock* {
    FreeSet& set = other.set(small);
    if (set.empty()) return nullptr;
    if (other.stream != nullptr) UpdateFences(other);
    PoolBlock key;
    key.size = size;
    for (auto it = set.lower_bound(&key); it != set.end(); ++it) {
      PoolBlock* b = *it;
      if (!Fits(b, size, small)) break;
      if (b->free_seq > other.safe_seq) continue;
      b->node = set.extract(it);
      Split(b, size, small);  // the rest stays in `other`'s cache
      b->owner = &ss;
      return b;
    }
    return nullptr;
  };
  if (PoolBlock* b = try_state(*neutral_)) return b;
  for (auto& other : streams_) {
    if (other.get() == &ss) continue;
    if (PoolBlock* b = try_state(*other)) return b;
  }
  return nullptr;
}

void MemoryPool::MarkAllocated(PoolBlock* b, size_t requested) {
  b->allocated = true;
  ++b->segment->allocated_blocks;
  Account(static_cast<int64_t>(b->size), static_cast<int64_t>(requested), 1);
}

void MemoryPool::ReleaseIdleBlock(PoolBlock* b, size_t requested) {
  Account(-static_cast<int64_t>(b->size), -static_cast<int64_t>(requested), -1);
  --b->segment->allocated_blocks;
  b->uses.clear();
  // The owner stays (its neighbours are the owner's, so they merge); a fence on the owner
  // stream, already passed, lets other streams take it.
  FreeBlock(b);
}

bool MemoryPool::Mergeable(const PoolBlock* a, const PoolBlock* n) {
  return n != nullptr && !n->allocated && !n->pending && n->owner == a->owner;
}

void MemoryPool::Absorb(PoolBlock* b, PoolBlock* n) {
  // b and its next neighbour n are free and in no cache set; b takes n's bytes.
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  b->free_seq = std::max(b->free_seq, n->free_seq);
  RecycleBlock(n);
}

void MemoryPool::FreeBlock(PoolBlock* b) {
  // Called for a block whose buffer is gone (and whose other-stream uses, if any, finished).
  b->allocated = false;
  StreamState& ss = *b->owner;
  b->free_seq = ss.stream == nullptr ? 0 : ++ss.free_count;
  Segment* seg = b->segment;
  seg->last_free = ++tick_;
  if (seg->small) {
    // Small blocks are coalesced lazily (CoalesceSmall): a loop that frees and reallocates one
    // size then finds its block as it left it, with no split or merge.
    if (!seg->dirty && (Mergeable(b, b->prev) || Mergeable(b, b->next))) {
      seg->dirty = true;
      dirty_.push_back(seg);
    }
    InsertFree(b);
    return;
  }
  if (Mergeable(b, b->prev)) {
    PoolBlock* p = b->prev;
    EraseFree(p);
    Absorb(p, b);
    b = p;
  }
  if (Mergeable(b, b->next)) {
    PoolBlock* n = b->next;
    EraseFree(n);
    Absorb(b, n);
  }
  InsertFree(b);
}

void MemoryPool::CoalesceSmall() {
  for (Segment* seg : dirty_) {
    seg->dirty = false;
    for (PoolBlock* b = seg->first; b != nullptr; b = b->next) {
      if (b->allocated || b->pending || !Mergeable(b, b->next)) continue;
      EraseFree(b);
      while (Mergeable(b, b->next)) {
        PoolBlock* n = b->next;
        EraseFree(n);
        Absorb(b, n);
      }
      InsertFree(b);
    }
  }
  dirty_.clear();
}

absl::StatusOr<std::shared_ptr<Buffer>> MemoryPool::Allocate(size_t bytes, hal::Stream& stream) {
  if (bytes > (SIZE_MAX >> 2)) {  // rounding must not wrap
    return MemoryError(
        absl::StrCat("out of memory on ", device_.ToString(), ": requested ", bytes, " bytes"));
  }
  const size_t size = RoundAllocationSize(bytes);
  const std::shared_ptr<const QuotaChain>& quotas = QuotaScope::CurrentChain();
  auto buffer = std::allocate_shared<Buffer>(RecyclingAllocator<Buffer>(), BufferKey(), this,
                                             device_, bytes, &stream);
  DeferredRelease release(this);
  std::unique_lock<std::mutex> lock(mu_);
  ++stats_.num_allocations;
  if (quotas != nullptr) {
    for (const QuotaChain* c = quotas.get(); c != nullptr; c = c->outer()) {
      const MemoryQuota& q = *c->quota();
      if (static_cast<int64_t>(size) > q.limit()) {  // spilling could never make room
        return MemoryError(absl::StrCat("out of memory on ", device_.ToString(), ": requesting ",
                                        FormatBytes(static_cast<int64_t>(bytes)),
                                        " exceeds the whole quota '", q.name(), "' (limit ",
                                        FormatBytes(q.limit()), ")"));
      }
    }
    while (MemoryQuota* full = quotas->TryCharge(static_cast<int64_t>(size))) {
      absl::Status error;
      if (!SpillOne(lock, full, &error)) {
        if (!error.ok()) return error;
        return MemoryError(absl::StrCat(
            "out of memory on ", device_.ToString(), ": requesting ",
            FormatBytes(static_cast<int64_t>(bytes)), " would exceed quota '", full->name(),
            "' (limit ", FormatBytes(full->limit()), ", in use ", FormatBytes(full->used()),
            "); no evictable buffer of it is left to spill"));
      }
    }
  }
  auto block = AllocateBlock(lock, size, StateFor(&stream), bytes);
  if (!block.ok()) {
    if (quotas != nullptr) quotas->Uncharge(static_cast<int64_t>(size));
    return block.status();
  }
  PoolBlock* b = *block;
  MarkAllocated(b, bytes);
  buffer->block_ = b;
  buffer->size_ = b->size;
  buffer->ptr_ = b->ptr;
  buffer->quotas_ = quotas;
  TraceEntry record;
  if (MemoryRecord(TraceKind::kAlloc, bytes, &stream, &record)) {
    lock.unlock();
    tracer_.Add(record);
  }
  return buffer;
}

bool MemoryPool::MemoryRecord(TraceKind kind, size_t bytes, hal::Stream* stream,
                              TraceEntry* out) const {
  if (!tracer_.enabled()) return false;
  out->kind = kind;
  out->name = kind == TraceKind::kAlloc ? alloc_name_ : free_name_;
  out->device = device_;
  out->stream = reinterpret_cast<uintptr_t>(stream);
  // Outside profiling sessions an allocation or free is untimed: at collection it is placed
  // after its thread's records before it (Tracer::Collect). A clock read is most of a
  // record's cost and the always-on budget is 2% of the tiniest op (benchmarks/trace_overhead.py);
  // sessions, whose memory timeline needs the times, read the clock.
  out->begin = tracer_.profiling() ? Tracer::Ticks() : 0;
  out->bytes = static_cast<int64_t>(bytes);
  out->allocated = stats_.allocated_bytes;
  out->reserved = stats_.reserved_bytes;
  return true;
}

absl::StatusOr<PoolBlock*> MemoryPool::AllocateBlock(std::unique_lock<std::mutex>& lock,
                                                     size_t size, StreamState& ss,
                                                     size_t requested) {
  const bool small = size <= options_.small_max;
  if (PoolBlock* b = TakeFree(ss, size, small)) {
    ++stats_.num_cache_hits;
    return b;
  }
  if (!pending_.empty() || (small && !dirty_.empty())) {
    ProcessPending();
    CoalesceSmall();
    if (PoolBlock* b = TakeFree(ss, size, small)) {
      ++stats_.num_cache_hits;
      return b;
    }
  }
  if (PoolBlock* b = Steal(ss, size, small)) {
    ++stats_.num_cache_hits;
    return b;
  }
  const size_t seg_size = SegmentSize(size, small);
  absl::Status error;
  if (options_.policy == PoolPolicy::kCompact &&
      stats_.reserved_bytes - stats_.allocated_bytes >= static_cast<int64_t>(seg_size)) {
    // Cached memory the request cannot use: whole free segments go back to the driver (least
    // recently freed first) before the pool grows.
    ReleaseSegments(lock, seg_size, false, &error);
    error = absl::OkStatus();
  }
  bool fenced = false;
  int retries = 0;
  for (;;) {
    // What other threads free or release while this one is unlocked (driver calls, waits) may
    // serve the request: if anything changed since this round began, the round is repeated
    // before giving up.
    const uint64_t seen_frees = tick_;
    const int64_t seen_reserved = stats_.reserved_bytes;
    const int64_t limit = stats_.limit_bytes;
    // Bytes other threads are getting from the driver right now count against the limit, so
    // that threads growing the pool at once cannot overshoot it together.
    const int64_t taken = stats_.reserved_bytes + growing_;
    const bool fits = limit == 0 || taken + static_cast<int64_t>(seg_size) <= limit;
    // A request that fits the limit only with an exact-size segment gets one.
    const size_t want = fits ? seg_size : size;
    if (limit == 0 || taken + static_cast<int64_t>(want) <= limit) {
      auto from_driver = [&](size_t bytes) -> absl::StatusOr<void*> {
        growing_ += static_cast<int64_t>(bytes);
        lock.unlock();
        auto raw = backend_->RawAllocate(device_.index, bytes);
        lock.lock();
        growing_ -= static_cast<int64_t>(bytes);
        return raw;
      };
      auto raw = from_driver(want);
      if (raw.ok()) return Split(NewSegmentBlock(*raw, want, small, ss), size, small);
      if (!IsOutOfMemory(raw.status())) return raw.status();
      if (want != size) {  // the device may still hold the request itself, if not a segment
        raw = from_driver(size);
        if (raw.ok()) return NewSegmentBlock(*raw, size, small, ss);
        if (!IsOutOfMemory(raw.status())) return raw.status();
      }
    }
    // Pressure. Each step frees something and loops back to try again.
    if (!fenced) {
      fenced = true;
      WaitForFences(lock);
      WaitForPending(lock);
      CoalesceSmall();
      // Under pressure any cached block that holds the request will do, however much larger.
      relaxed_fit_ = true;
      PoolBlock* b = TakeFree(ss, size, small);
      if (b == nullptr) b = Steal(ss, size, small);
      relaxed_fit_ = false;
      if (b != nullptr) {
        ++stats_.num_cache_hits;
        return b;
      }
    }
    if (ReleaseSegments(lock, want, false, &error)) continue;
    if (!error.ok()) return error;
    if (SpillOne(lock, nullptr, &error)) {
      fenced = false;  // the spill freed a block; the caches may now serve the request
      PoolBlock* b = TakeFree(ss, size, small);
      if (b == nullptr) b = Steal(ss, size, small);
      if (b != nullptr) {
        ++stats_.num_cache_hits;
        return b;
      }
      continue;
    }
    if (!error.ok()) return error;
    if ((tick_ != seen_frees || stats_.reserved_bytes < seen_reserved || growing_ > 0) &&
        ++retries <= 64) {
      fenced = false;
      PoolBlock* b = TakeFree(ss, size, small);
      if (b == nullptr) b = Steal(ss, size, small);
      if (b != nullptr) {
        ++stats_.num_cache_hits;
        return b;
      }
      if (growing_ > 0) {  // another thread's driver call may fail and hand its bytes back
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
      continue;
    }
    return MemoryError(Describe(requested, size));
  }
}

PoolBlock* MemoryPool::NewSegmentBlock(void* base, size_t bytes, bool small, StreamState& ss) {
  auto* seg = new Segment{static_cast<char*>(base), bytes, small};
  segments_.insert(seg);
  ++stats_.num_driver_allocations;
  stats_.reserved_bytes += static_cast<int64_t>(bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  ++stats_.segments;
  PoolBlock* b = NewBlock();
  b->ptr = seg->base;
  b->size = bytes;
  b->segment = seg;
  b->owner = &ss;
  seg->first = b;
  return b;
}

std::string MemoryPool::Describe(size_t requested, size_t rounded) const {
  const MemoryStats& s = stats_;
  std::string limit = s.limit_bytes > 0 ? absl::StrCat("process limit ", FormatBytes(s.limit_bytes))
                                        : std::string("no process limit (the device is full)");
  return absl::StrCat("out of memory on ", device_.ToString(), ": requested ",
                      FormatBytes(static_cast<int64_t>(requested)), " (", requested,
                      " bytes, rounded to ", rounded, "); ", limit, "; pool: allocated ",
                      FormatBytes(s.allocated_bytes), ", reserved ", FormatBytes(s.reserved_bytes),
                      ", cached ", FormatBytes(s.reserved_bytes - s.allocated_bytes), ", spilled ",
                      FormatBytes(s.spilled_bytes),
                      " (cached segments released and evictable buffers spilled before failing)");
}

void MemoryPool::SetPolicy(PoolPolicy policy) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.policy = policy;
}

PoolPolicy MemoryPool::policy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_.policy;
}

int64_t MemoryPool::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.limit_bytes;
}

absl::Status MemoryPool::RecordStream(Buffer& buffer, hal::Stream& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (&stream == buffer.stream_) return absl::OkStatus();
  if (buffer.block_ == nullptr) return absl::OkStatus();  // spilled: no device memory in use
  auto& uses = buffer.block_->uses;
  if (std::find(uses.begin(), uses.end(), &stream) == uses.end()) uses.push_back(&stream);
  return absl::OkStatus();
}

void MemoryPool::Free(Buffer& buffer) {
  std::unique_lock<std::mutex> lock(mu_);
  while (buffer.moving_) moved_.wait(lock);
  if (buffer.in_lru_) LruRemove(buffer);
  if (buffer.evictable_) --stats_.evictable_buffers;
  TraceEntry record;
  if (buffer.host_copy_ != nullptr) {  // spilled: only the host copy is left
    stats_.spilled_bytes -= static_cast<int64_t>(RoundAllocationSize(buffer.requested_));
    void* host = buffer.host_copy_;
    const bool traced = MemoryRecord(TraceKind::kFree, buffer.requested_, buffer.stream_, &record);
    lock.unlock();
    if (traced) tracer_.Add(record);
    if (engine_ != nullptr) (void)engine_->pinned().Free(host);
    return;
  }
  PoolBlock* b = buffer.block_;
  if (b == nullptr) return;
  if (!b->uses.empty()) {
    // Work on the recorded streams may still use the memory: fence it there, outside the lock
    // (the block stays counted as allocated meanwhile, so nothing else touches it).
    std::vector<hal::Stream*> uses;
    uses.swap(b->uses);
    lock.unlock();
    std::vector<std::shared_ptr<hal::Event>> events;
    for (hal::Stream* s : uses) {
      auto ev = backend_->CreateEvent(device_.index, false);
      if (ev.ok() && backend_->Record(**ev, *s).ok()) {
        events.push_back(std::shared_ptr<hal::Event>(std::move(*ev)));
      } else {
        (void)backend_->Synchronize(*s);  // cannot fence it: wait instead of risking reuse
      }
    }
    lock.lock();
    b->events = std::move(events);
  }
  if (buffer.quotas_ != nullptr) buffer.quotas_->Uncharge(QuotaCharge(buffer));
  Account(-static_cast<int64_t>(b->size), -static_cast<int64_t>(buffer.requested_), -1);
  --b->segment->allocated_blocks;
  b->allocated = false;
  const bool traced = MemoryRecord(TraceKind::kFree, buffer.requested_, buffer.stream_, &record);
  if (!b->events.empty()) {
    b->pending = true;
    pending_.push_back(b);
  } else {
    FreeBlock(b);
  }
  lock.unlock();
  if (traced) tracer_.Add(record);
}

MemoryStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  const_cast<MemoryPool*>(this)->CoalesceSmall();  // largest_free_block counts merged blocks
  MemoryStats s = stats_;
  s.cached_bytes = s.reserved_bytes - s.allocated_bytes;
  size_t largest = 0;
  for (const StreamState* ss : {neutral_.get()}) {
    if (!ss->large.empty()) largest = std::max(largest, (*ss->large.rbegin())->size);
    if (!ss->small.empty()) largest = std::max(largest, (*ss->small.rbegin())->size);
  }
  for (const auto& ss : streams_) {
    if (!ss->large.empty()) largest = std::max(largest, (*ss->large.rbegin())->size);
    if (!ss->small.empty()) largest = std::max(largest, (*ss->small.rbegin())->size);
  }
  s.largest_free_block = static_cast<int64_t>(largest);
  return s;
}

void MemoryPool::ResetPeakStats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace pygpukit
