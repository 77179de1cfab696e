// Spill of evictable live buffers to pinned host memory and paging them back: the part of the
// pool that moves data. A buffer being moved is flagged (`moving_`) so that pins, frees and
// other spills wait for the move to finish; copies run outside the pool's lock.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/memory_pool_internal.h"
#include "runtime/memory/transfer.h"

namespace pygpukit {

void MemoryPool::LruRemove(Buffer& b) {
  (b.lru_prev_ ? b.lru_prev_->lru_next_ : lru_head_) = b.lru_next_;
  (b.lru_next_ ? b.lru_next_->lru_prev_ : lru_tail_) = b.lru_prev_;
  b.lru_prev_ = b.lru_next_ = nullptr;
  b.in_lru_ = false;
}

void MemoryPool::LruAppend(Buffer& b) {
  b.lru_prev_ = lru_tail_;
  b.lru_next_ = nullptr;
  (lru_tail_ ? lru_tail_->lru_next_ : lru_head_) = &b;
  lru_tail_ = &b;
  b.in_lru_ = true;
}

absl::Status MemoryPool::Pin(Buffer& buffer) {
  DeferredRelease release(this);
  std::unique_lock<std::mutex> lock(mu_);
  while (buffer.moving_) moved_.wait(lock);
  ++buffer.pins_;
  buffer.last_use_ = ++tick_;
  if (buffer.in_lru_) {  // most recently used goes last
    LruRemove(buffer);
    LruAppend(buffer);
  }
  if (buffer.block_ == nullptr) {
    absl::Status s = PageInLocked(lock, buffer);
    if (!s.ok()) {
      --buffer.pins_;
      return s;
    }
  }
  return absl::OkStatus();
}

void MemoryPool::Unpin(Buffer& buffer) { buffer.pins_.fetch_sub(1, std::memory_order_seq_cst); }

absl::Status MemoryPool::SetEvictable(Buffer& buffer, bool evictable) {
  std::shared_ptr<Buffer> keep = buffer.weak_from_this().lock();  // alive across a page-in
  if (keep == nullptr) return RuntimeError("set_evictable: the array is being freed");
  DeferredRelease release(this);
  std::unique_lock<std::mutex> lock(mu_);
  while (buffer.moving_) moved_.wait(lock);
  if (evictable == buffer.evictable_.load()) return absl::OkStatus();
  if (evictable) {
    if (engine_ == nullptr) {
      return NotImplementedError(absl::StrCat("set_evictable: spill is not available on ",
                                              device_.ToString(), " (no transfer engine)"));
    }
    buffer.evictable_.store(true, std::memory_order_release);
    ++stats_.evictable_buffers;
    buffer.last_use_ = ++tick_;
    if (buffer.block_ != nullptr) LruAppend(buffer);
    return absl::OkStatus();
  }
  if (buffer.block_ == nullptr) PGK_RETURN_IF_ERROR(PageInLocked(lock, buffer));
  buffer.evictable_.store(false, std::memory_order_release);
  --stats_.evictable_buffers;
  if (buffer.in_lru_) LruRemove(buffer);
  return absl::OkStatus();
}

absl::Status MemoryPool::Evict(Buffer& buffer) {
  // Held across the move: the caller's reference may be the queued task that frees it.
  std::shared_ptr<Buffer> keep = buffer.weak_from_this().lock();
  if (keep == nullptr) return RuntimeError("evict: the array is being freed");
  std::unique_lock<std::mutex> lock(mu_);
  while (buffer.moving_) moved_.wait(lock);
  if (!buffer.evictable_.load()) {
    return ValueError("evict: the array's memory is not evictable (mark it evictable first)");
  }
  if (buffer.pins_.load(std::memory_order_seq_cst) > 0) {
    return RuntimeError("evict: the array is in use by an operation being enqueued");
  }
  if (buffer.block_ == nullptr) return absl::OkStatus();  // already in host memory
  return SpillLocked(lock, buffer);
}

bool MemoryPool::SpillOne(std::unique_lock<std::mutex>& lock, const MemoryQuota* quota,
                          absl::Status* error) {
  if (engine_ == nullptr) return false;
  // Two passes over the LRU list: buffers of kFirst quotas, then the others but kNever.
  for (SpillOrder order : {SpillOrder::kFirst, SpillOrder::kNormal}) {
    for (Buffer* b = lru_head_; b != nullptr; b = b->lru_next_) {
      if (b->pins_.load(std::memory_order_seq_cst) > 0 || b->moving_ || b->block_ == nullptr) {
        continue;
      }
      if (quota != nullptr && (b->quotas_ == nullptr || !b->quotas_->Contains(quota))) continue;
      // Under a quota's own pressure, its buffers go in LRU order whatever its spill order.
      const SpillOrder mine = quota != nullptr ? SpillOrder::kNormal
                              : b->quotas_     ? b->quotas_->spill_order()
                                               : SpillOrder::kNormal;
      if (mine != order) continue;
      // A reference keeps the buffer alive while it moves: its last owner may be a queued task
      // that drops it meanwhile (whose free must not wait for the move that waits for the task).
      std::shared_ptr<Buffer> keep = b->weak_from_this().lock();
      if (keep == nullptr) continue;  // being destroyed
      absl::Status s = SpillLocked(lock, *b);
      deferred_.push_back(std::move(keep));
      has_deferred_.store(true, std::memory_order_release);
      if (!s.ok()) {
        *error = s;
        return false;
      }
      return true;
    }
  }
  return false;
}

absl::Status MemoryPool::SpillLocked(std::unique_lock<std::mutex>& lock, Buffer& buffer) {
  if (engine_ == nullptr) {
    return NotImplementedError(absl::StrCat("spill: no transfer engine on ", device_.ToString()));
  }
  PoolBlock* b = buffer.block_;
  const size_t size = RoundAllocationSize(buffer.requested_);  // what the array can use
  // Recorded uses on other streams must finish before the data is read and the memory freed.
  std::vector<hal::Stream*> uses = b->uses;
  buffer.moving_ = true;
  if (buffer.pins_.load(std::memory_order_seq_cst) > 0) {  // pinned meanwhile: leave it
    buffer.moving_ = false;
    moved_.notify_all();
    return RuntimeError("spill: the array is in use by an operation being enqueued");
  }
  if (buffer.in_lru_) LruRemove(buffer);
  lock.unlock();
  absl::Status status;
  for (hal::Stream* s : uses) {  // through events: the streams' own errors stay theirs
    if (!status.ok()) break;
    auto ev = backend_->CreateEvent(device_.index, false);
    status = ev.status();
    if (status.ok()) status = backend_->Record(**ev, *s);
    if (status.ok()) status = backend_->Synchronize(**ev);
  }
  void* host = nullptr;
  if (status.ok()) {
    auto h = engine_->pinned().Allocate(size);
    status = h.status();
    if (h.ok()) host = *h;
  }
  // Blocking: when it returns, no queued work can touch the device block any more.
  if (status.ok()) status = engine_->ToHost(host, b->ptr, size, *buffer.stream_, true);
  if (!status.ok() && host != nullptr) {
    hal::Stream* d2h = &engine_->d2h_stream();  // a queued DMA may still write it
    (void)engine_->pinned().Free(host, absl::MakeSpan(&d2h, 1));
    host = nullptr;
  }
  lock.lock();
  buffer.moving_ = false;
  moved_.notify_all();
  if (!status.ok()) {
    LruAppend(buffer);
    return absl::Status(status.code(), absl::StrCat("spill: ", status.message()));
  }
  if (buffer.quotas_ != nullptr) buffer.quotas_->Uncharge(QuotaCharge(buffer));
  ReleaseIdleBlock(b, buffer.requested_);
  buffer.block_ = nullptr;
  buffer.ptr_ = nullptr;
  buffer.host_copy_ = host;
  ++stats_.num_spills;
  stats_.spilled_bytes += static_cast<int64_t>(size);
  return absl::OkStatus();
}

absl::Status MemoryPool::PageInLocked(std::unique_lock<std::mutex>& lock, Buffer& buffer) {
  const size_t size = RoundAllocationSize(buffer.requested_);  // the bytes the host copy holds
  buffer.moving_ = true;
  auto finish = [&](absl::Status s) {
    buffer.moving_ = false;
    moved_.notify_all();
    return s;
  };
  if (buffer.quotas_ != nullptr) {
    while (MemoryQuota* full = buffer.quotas_->TryCharge(QuotaCharge(buffer))) {
      absl::Status error;
      if (!SpillOne(lock, full, &error)) {
        if (!error.ok()) return finish(error);
        return finish(MemoryError(
            absl::StrCat("page-in: bringing back ", FormatBytes(static_cast<int64_t>(size)),
                         " would exceed quota '", full->name(), "' (limit ",
                         FormatBytes(full->limit()), ", in use ", FormatBytes(full->used()), ")")));
      }
    }
  }
  auto block = AllocateBlock(lock, size, StateFor(buffer.stream_), buffer.requested_);
  if (!block.ok()) {
    if (buffer.quotas_ != nullptr) buffer.quotas_->Uncharge(QuotaCharge(buffer));
    return finish(block.status());
  }
  PoolBlock* b = *block;
  MarkAllocated(b, buffer.requested_);
  void* host = buffer.host_copy_;
  lock.unlock();
  // The pinned copy goes back by DMA on the transfer stream; the buffer's stream waits for it.
  absl::Status status = engine_->ToDevice(b->ptr, host, size, *buffer.stream_, false);
  if (status.ok()) {
    hal::Stream* h2d = &engine_->h2d_stream();
    (void)engine_->pinned().Free(host, absl::MakeSpan(&h2d, 1));
  }
  if (!status.ok()) (void)backend_->Synchronize(engine_->h2d_stream());  // a queued DMA ends
  lock.lock();
  if (!status.ok()) {
    if (buffer.quotas_ != nullptr) buffer.quotas_->Uncharge(QuotaCharge(buffer));
    ReleaseIdleBlock(b, buffer.requested_);
    return finish(absl::Status(status.code(), absl::StrCat("page-in: ", status.message())));
  }
  buffer.block_ = b;
  buffer.ptr_ = b->ptr;
  buffer.size_ = b->size;
  buffer.host_copy_ = nullptr;
  stats_.spilled_bytes -= static_cast<int64_t>(size);
  ++stats_.num_page_ins;
  if (buffer.evictable_) LruAppend(buffer);
  return finish(absl::OkStatus());
}

}  // namespace pygpukit
