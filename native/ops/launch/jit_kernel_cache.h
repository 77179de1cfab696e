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

#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/status.h"

namespace pygpukit::ops {

/// A cache key being built: the short keys of the built-in families stay off the heap.
using KernelKey = absl::InlinedVector<char, 64>;

/// `key` as a string_view.
inline absl::string_view KeyView(const KernelKey& key) { return {key.data(), key.size()}; }

/// A key made of the bytes of `values` (fields whose bytes are all value bits, each written
/// whole: no padding reaches the key), built on every launch with no formatting.
template <class... T>
KernelKey PodKey(const T&... values) {
  static_assert(((std::has_unique_object_representations_v<T> || std::is_same_v<T, bool>)&&...));
  KernelKey k((sizeof(T) + ...));
  char* p = k.data();
  ((std::memcpy(p, &values, sizeof(T)), p += sizeof(T)), ...);
  return k;
}

/// Entries by key; `build` runs outside the lock on a miss (two threads missing the same key
/// both build it: the JitEngine compiles a source once, so that only repeats a lookup).
/// Instances live for the process (function-local statics, never destroyed): each thread keeps
/// its recent hits in a small table in front of the shared map: the key's hash and the address
/// of the key as the map stores it (a node map: it never moves), trusted while the owner and the
/// whole key match, since an entry never changes once made. A cached launch then takes no lock
/// and allocates nothing. The table is plain data (constant-initialized, trivially destroyed),
/// so reaching it costs one thread-local lookup, with no initialization guard.
template <class Entry>
class JitKernelCache {
 public:
  template <class Build>
  absl::StatusOr<Entry> Get(absl::string_view key, Build&& build) {
    const size_t hash = absl::Hash<absl::string_view>{}(key);
    Slot& slot = Recent()[hash % kSlots];
    if (slot.owner == this && slot.hash == hash && *slot.key == key) return slot.entry;
    absl::StatusOr<std::pair<const std::string*, Entry>> e =
        Lookup(key, std::forward<Build>(build));
    if (!e.ok()) return e.status();
    slot = Slot{this, hash, e->first, e->second};
    return e->second;
  }

 private:
  struct Slot {
    const JitKernelCache* owner = nullptr;
    size_t hash = 0;
    const std::string* key = nullptr;  // the shared map's copy
    Entry entry{};
  };
  static constexpr size_t kSlots = 16;

  static std::array<Slot, kSlots>& Recent() {
    thread_local std::array<Slot, kSlots> recent;
    return recent;
  }

  // The entry of `key` and the address of the map's copy of the key.
  template <class Build>
  absl::StatusOr<std::pair<const std::string*, Entry>> Lookup(absl::string_view key,
                                                              Build&& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) {
        return std::make_pair(&it->first, it->second);
      }
    }
    PGK_ASSIGN_OR_RETURN(Entry e, std::forward<Build>(build)());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.emplace(std::string(key), e).first;
    return std::make_pair(&it->first, it->second);
  }

  std::mutex mu_;
  absl::node_hash_map<std::string, Entry> entries_;
};

}  // namespace pygpukit::ops
