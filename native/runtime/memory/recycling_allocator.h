// Internal: the allocator of the pool's buffer objects.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace pygpukit {

// Allocator for buffer objects (with their shared_ptr control blocks): a per-thread free list of
// equal-sized chunks, so that allocating from the cache costs no trip to the heap. A chunk freed
// on another thread joins that thread's list.
template <typename T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>&) {}

  struct FreeList {
    std::vector<void*> chunks;
    ~FreeList() {
      for (void* p : chunks) ::operator delete(p);
      Gone() = true;
    }
  };
  static FreeList& List() {
    thread_local FreeList list;
    return list;
  }
  // Set once this thread's list is destroyed (thread exit): later frees go to the heap.
  static bool& Gone() {
    thread_local bool gone = false;
    return gone;
  }
  T* allocate(size_t n) {
    if (n == 1 && !Gone()) {
      auto& chunks = List().chunks;
      if (!chunks.empty()) {
        void* p = chunks.back();
        chunks.pop_back();
        return static_cast<T*>(p);
      }
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    constexpr size_t kMaxCached = 4096;
    if (n == 1 && !Gone()) {
      auto& chunks = List().chunks;
      if (chunks.size() < kMaxCached) {
        chunks.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }
  template <typename U>
  bool operator==(const RecyclingAllocator<U>&) const {
    return true;
  }
};

}  // namespace pygpukit
