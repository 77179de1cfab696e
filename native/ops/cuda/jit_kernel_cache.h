// The per-family cache of JIT kernels in front of the JitEngine: a short key made of what the
// generated source depends on maps to the loaded functions, so a cached launch neither generates
// nor hashes source text.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
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

/// Entries by key; `build` runs outside the lock on a miss (two threads missing the same key
/// both build it: the JitEngine compiles a source once, so that only repeats a lookup).
/// Instances live for the process (function-local statics, never destroyed): each thread keeps
/// its recent hits in a small table in front of the shared map, trusted while the owner and the
/// key match, since an entry never changes once made. A cached launch then takes no lock.
template <class Entry>
class JitKernelCache {
 public:
  template <class Build>
  absl::StatusOr<Entry> Get(absl::string_view key, Build&& build) {
    Slot& slot = Recent()[SlotOf(key)];
    if (slot.owner == this && slot.key == key) return slot.entry;
    absl::StatusOr<Entry> e = Lookup(std::string(key), std::forward<Build>(build));
    if (e.ok()) {
      slot.owner = this;
      slot.key.assign(key.data(), key.size());
      slot.entry = *e;
    }
    return e;
  }

 private:
  struct Slot {
    const JitKernelCache* owner = nullptr;
    std::string key;
    Entry entry{};
  };
  static constexpr size_t kSlots = 16;

  static std::array<Slot, kSlots>& Recent() {
    thread_local std::array<Slot, kSlots> recent;
    return recent;
  }

  // FNV-1a over the short key (a few dozen bytes).
  static size_t SlotOf(absl::string_view key) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29)) % kSlots;
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
