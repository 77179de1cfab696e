// The buffer handle (pool-owned or foreign memory) and residency pins: what ops hold while they
// read device addresses. The pool's side of both (Free, Pin, Unpin, RecordStream) is in
// memory_pool.cc and memory_spill.cc.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/memory_pool_internal.h"

namespace pygpukit {

MemoryPool::DeferredRelease::~DeferredRelease() {
  if (!pool_->has_deferred_.load(std::memory_order_acquire)) return;
  std::vector<std::shared_ptr<Buffer>> dead;
  {
    std::lock_guard<std::mutex> lock(pool_->mu_);
    dead.swap(pool_->deferred_);
    pool_->has_deferred_.store(false, std::memory_order_release);
  }
}  // `dead` goes here, outside the lock: a last reference frees through the pool

Buffer::~Buffer() {
  if (pool_ != nullptr) {
    pool_->Free(*this);
    return;
  }
  std::vector<hal::Stream*> used = {stream_};
  used.insert(used.end(), foreign_uses_.begin(), foreign_uses_.end());
  if (release_) release_(std::move(used));
}

std::shared_ptr<Buffer> Buffer::Foreign(Device device, void* ptr, size_t bytes, hal::Stream* stream,
                                        ForeignRelease release) {
  auto b = std::make_shared<Buffer>(BufferKey(), nullptr, device, bytes, stream);
  b->ptr_ = ptr;
  b->size_ = bytes;
  b->release_ = std::move(release);
  return b;
}

absl::Status Buffer::RecordStream(hal::Stream& stream) {
  if (pool_ != nullptr) return pool_->RecordStream(*this, stream);
  std::lock_guard<std::mutex> lock(foreign_mu_);
  if (&stream != stream_ &&
      std::find(foreign_uses_.begin(), foreign_uses_.end(), &stream) == foreign_uses_.end()) {
    foreign_uses_.push_back(&stream);
  }
  return absl::OkStatus();
}

std::vector<hal::Stream*> Buffer::UsedOn() const {
  std::vector<hal::Stream*> out{stream_};
  if (pool_ == nullptr) {
    std::lock_guard<std::mutex> lock(foreign_mu_);
    out.insert(out.end(), foreign_uses_.begin(), foreign_uses_.end());
    return out;
  }
  std::lock_guard<std::mutex> lock(pool_->mu_);
  if (block_ != nullptr) out.insert(out.end(), block_->uses.begin(), block_->uses.end());
  return out;
}

bool Buffer::resident() const {
  if (pool_ == nullptr) return true;
  std::lock_guard<std::mutex> lock(pool_->mu_);
  return block_ != nullptr;
}

ResidencyPin::~ResidencyPin() {
  for (auto& b : pinned_) {
    if (b != nullptr && !b->foreign()) b->pool()->Unpin(*b);
  }
}

ResidencyPin& ResidencyPin::operator=(ResidencyPin&& other) {
  if (this != &other) {
    for (auto& b : pinned_) {
      if (b != nullptr && !b->foreign()) b->pool()->Unpin(*b);
    }
    pinned_ = std::move(other.pinned_);
    other.pinned_.clear();
  }
  return *this;
}

absl::Status ResidencyPin::Add(const std::shared_ptr<Buffer>& buffer) {
  if (buffer == nullptr) return absl::OkStatus();
  if (buffer->foreign()) {  // never moves: only held alive
    pinned_.push_back(buffer);
    return absl::OkStatus();
  }
  buffer->pins_.fetch_add(1, std::memory_order_seq_cst);
  if (buffer->evictable_.load(std::memory_order_seq_cst)) {
    // Evictable: the pool's slow path (waits for a move, pages the buffer in).
    buffer->pins_.fetch_sub(1, std::memory_order_seq_cst);
    PGK_RETURN_IF_ERROR(buffer->pool()->Pin(*buffer));
  }
  pinned_.push_back(buffer);
  return absl::OkStatus();
}

void ResidencyPin::PinForLife(Buffer& buffer) {
  // A pin never released: spills require no pins, so the memory stays where it is.
  if (!buffer.foreign()) buffer.pins_.fetch_add(1, std::memory_order_seq_cst);
}

}  // namespace pygpukit
