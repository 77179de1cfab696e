// The per-family cache of JIT kernels in front of the JitEngine: a short key made of what the
// generated source depends on maps to the loaded functions, so a cached launch neither generates
// nor hashes source text.
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/status.h"

namespace pygpukit::ops::cuda_kernels {

/// Entries by key; `build` runs outside the lock on a miss (two threads missing the same key
/// both build it: the JitEngine compiles a source once, so that only repeats a lookup).
template <class Entry>
class JitKernelCache {
 public:
  template <class Build>
  absl::StatusOr<Entry> Get(const std::string& key, Build&& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    PGK_ASSIGN_OR_RETURN(Entry e, std::forward<Build>(build)());
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.emplace(key, e).first->second;
  }

 private:
  std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

}  // namespace pygpukit::ops::cuda_kernels
