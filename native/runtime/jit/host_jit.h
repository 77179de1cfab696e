// Host-compiler JIT for the CPU backend's user kernels (gp.ElementwiseKernel on the CPU): C++
// source is compiled by the system compiler into a shared object, cached on disk next to the
// NVRTC cache (in the JIT's checked entry format, jit_cache.h) and loaded with dlopen.
#pragma once

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit {

/// The address of `symbol` (extern "C") in the source `source()` returns, compiled with $CXX
/// (else c++) as C++17, -O2, with the JIT's embedded headers on the include path. `key` names the
/// source (everything it depends on): a key seen before with the same compiler returns the
/// symbol without generating the source again. Compiled once per source and compiler: the
/// shared object is cached in memory and under the cache directory (PYGPUKIT_CACHE_DIR).
/// NotImplementedError when no compiler runs; a compile error is a RuntimeError carrying the
/// compiler's output. Thread-safe.
absl::StatusOr<void*> HostJitSymbol(absl::string_view key, absl::FunctionRef<std::string()> source,
                                    absl::string_view symbol);

/// Counters of the host-compiler JIT (gp.jit.cache_info()'s host_* entries).
struct HostJitInfo {
  std::string directory;         // where the shared objects are ("" before the first use)
  int64_t compiles = 0;          // compiler runs of this process
  int64_t disk_hits = 0;         // shared objects found on disk
  int64_t rejected_entries = 0;  // entries on disk that were truncated, corrupt or foreign
  int64_t loaded = 0;            // sources with a loaded shared object
  double compile_seconds = 0;
};
HostJitInfo HostJitStats();
/// Forgets the loaded sources and the directory (later calls choose it again from the
/// environment, then load or compile; loaded code stays mapped for work already queued); `disk`
/// also deletes the cached shared objects.
absl::Status HostJitClear(bool disk);

}  // namespace pygpukit
