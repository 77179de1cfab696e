// The per-family cache of JIT kernels in front of the JitEngine: a short key made of what the
// generated source depends on maps to the loaded functions, so a cached launch neither generates
// nor hashes source text.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/status.h"

namespace pygpukit::ops::cuda_kernels {

/// A cache key being built: the short keys of the built-in families stay off the heap.
using KernelKey = absl::InlinedVector<char, 64>;

/// `key` as a string_view.
inline absl::string_view KeyView(const KernelKey& key) { return {key.data(), key.size()}; }

/// A key made of the bytes of `values` (trivially copyable fields, each written whole), built
/// on every launch with no formatting.
template <class... T>
KernelKey PodKey(const T&... values) {
  static_assert((std::is_trivially_copyable_v<T> && ...));
  KernelKey k((sizeof(T) + ...));
  char* p = k.data();
  ((std::memcpy(p, &values, sizeof(T)), p += sizeof(T)), ...);
  return k;
}

/// Entries by key; `build` runs outside the lock on a miss (two threads missing the same key
/// both build it: the JitEngine compiles a source once, so that only repeats a lookup).
/// Instances live for the process (function-local statics, never destroyed): each thread keeps
/// its recent hits of short keys in a small table in front of the shared map, trusted while the
/// owner and the key match, since an entry never changes once made. A cached launch then takes
/// no lock. The table is plain data (constant-initialized, trivially destroyed), so reaching it
/// costs one thread-local lookup, with no initialization guard.
template <class Entry>
class JitKernelCache {
 public:
  template <class Build>
  absl::StatusOr<Entry> Get(absl::string_view key, Build&& build) {
    // Longer keys (user kernels carry their source) go to the shared map every time.
    if (key.size() > kMaxKey) return Lookup(std::string(key), std::forward<Build>(build));
    Slot& slot = Recent()[SlotOf(key)];
    if (slot.owner == this && slot.size == key.size() &&
        std::memcmp(slot.key, key.data(), key.size()) == 0) {
      return slot.entry;
    }
    absl::StatusOr<Entry> e = Lookup(std::string(key), std::forward<Build>(build));
    if (e.ok()) {
      slot.owner = this;
      slot.size = static_cast<uint32_t>(key.size());
      std::memcpy(slot.key, key.data(), key.size());
      slot.entry = *e;
    }
    return e;
  }

 private:
  static constexpr size_t kMaxKey = 48;  // the built-in families' keys are 15 to 40 bytes
  struct Slot {
    const JitKernelCache* owner = nullptr;
    uint32_t size = 0;
    char key[kMaxKey] = {};
    Entry entry{};
  };
  static constexpr size_t kSlots = 16;

  static std::array<Slot, kSlots>& Recent() {
    thread_local std::array<Slot, kSlots> recent;
    return recent;
  }

  // FNV-1a over the short key (a few dozen bytes), eight bytes per step: it runs per launch.
  static size_t SlotOf(absl::string_view key) {
    uint64_t h = 1469598103934665603ull;
    size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, key.data() + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < key.size(); ++i) h = (h ^ static_cast<unsigned char>(key[i])) * 1099511628211ull;
    h ^= h >> 33;  // every byte reaches the low bits the slot is taken from
    h *= 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 33)) % kSlots;
  }

  template <class Build>
  absl::StatusOr<Entry> Lookup(const std::string& key, Build&& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    PGK_ASSIGN_OR_RETURN(Entry e, std::forward<Build>(build)());
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.emplace(key, e).first->second;
  }

  std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

}  // namespace pygpukit::ops::cuda_kernels
