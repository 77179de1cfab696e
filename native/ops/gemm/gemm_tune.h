// GEMM autotuning: the process-wide switch, one tune cache per CUDA device and what the Python
// layer reports about them. Off by default (the rule-based selection of ops/gemm/gemm_select.h
// serves): PYGPUKIT_GEMM_AUTOTUNE=1 or SetGemmAutotune(true) makes auto-mode CUDA matmuls time
// the applicable kernel configurations once per problem key and reuse the fastest
// (ops/gemm/cuda/gemm_autotune_cuda.cc). The CPU backend has one matmul kernel and never tunes.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "ops/gemm/gemm_tune_cache.h"

namespace pygpukit::ops {

/// Whether auto-mode CUDA matmuls are autotuned (PYGPUKIT_GEMM_AUTOTUNE=1 at start; else off).
bool GemmAutotuneEnabled();
/// Turns autotuning on or off for later matmuls of this process.
void SetGemmAutotune(bool enabled);

/// What gp.gemm_tune_cache_info reports for one device.
struct GemmTuneInfo {
  bool enabled = false;
  std::string directory;  // where cache files go now ("" when none can be determined)
  // The device's cache; for a CUDA device not used yet, the path its file would have. On the
  // CPU: no path, no entries, disk unused.
  TuneCacheStats cache;
};

/// The tune state of `device`.
absl::StatusOr<GemmTuneInfo> GemmTuneCacheInfo(Device device);
/// Forgets every device's tuned choices and counters (cache files are read again on next
/// use); `disk` also deletes this process's devices' cache files.
absl::Status ClearGemmTuneCache(bool disk);

/// The cache of CUDA device `device`, its file read on first use (for the CUDA tuner).
absl::StatusOr<GemmTuneCache*> GemmTuneCacheFor(Device device);
/// The header a cache file of CUDA device `device` must carry, and the file's path now ("" when
/// no cache directory can be determined).
absl::StatusOr<std::pair<TuneCacheHeader, std::string>> GemmTuneIdentity(Device device);

}  // namespace pygpukit::ops
