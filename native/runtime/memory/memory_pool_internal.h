// Internal records of the memory pool, shared by its translation units (memory_pool.cc and
// memory_spill.cc). Guarded by MemoryPool::mu_.
#pragma once

#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "runtime/memory/memory_pool.h"

namespace pygpukit {

// One block of a segment: allocated to a buffer, or free in one stream's cache.
struct PoolBlock {
  char* ptr = nullptr;
  size_t size = 0;
  MemoryPool::Segment* segment = nullptr;
  PoolBlock* prev = nullptr;  // address-order neighbours within the segment
  PoolBlock* next = nullptr;
  bool allocated = false;
  bool pending = false;  // freed, waiting for events of other streams' uses
  MemoryPool::StreamState* owner = nullptr;
  uint64_t free_seq = 0;           // the owner's free counter when this block was freed
  std::vector<hal::Stream*> uses;  // streams recorded with RecordStream
  std::vector<std::shared_ptr<hal::Event>> events;           // pending until these complete
  std::set<PoolBlock*, MemoryPool::BySize>::node_type node;  // reused set node
};

struct MemoryPool::Segment {
  char* base;
  size_t size;
  bool small;
  uint64_t last_free = 0;  // tick of the latest free inside it (LRU order of release)
  int64_t allocated_blocks = 0;
  PoolBlock* first = nullptr;
  bool dirty = false;  // small segment with free neighbours not merged yet (in MemoryPool::dirty_)
};

// The cache of one stream. A block freed on the stream is reusable at once by it; another stream
// may take it once a fence (an event recorded on this stream after the free) has completed.
struct MemoryPool::StreamState {
  hal::Stream* stream = nullptr;  // null: the neutral cache, safe for every stream
  FreeSet small, large;
  uint64_t free_count = 0;  // frees so far
  uint64_t safe_seq = 0;    // frees covered by a completed fence
  struct Fence {
    std::shared_ptr<hal::Event> event;  // shared: WaitForFences waits on it outside the lock
    uint64_t seq;
  };
  std::deque<Fence> fences;
  FreeSet& set(bool small_pool) { return small_pool ? small : large; }
};

inline bool MemoryPool::BySize::operator()(const PoolBlock* a, const PoolBlock* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

}  // namespace pygpukit
