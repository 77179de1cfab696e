// NVRTC JIT engine: compiles CUDA C++ source for a device's own arch, caches the images in memory
// and on disk (runtime/jit/jit_cache.h), and loads them for launches through the dispatcher.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/jit/jit_cache.h"

namespace pygpukit {
namespace cuda {
class CudaBackend;
}

/// Counters and state of the JIT cache (gp.jit.cache_info()).
struct JitCacheInfo {
  std::string directory;  // the entry files' directory ("" when kept in memory only)
  bool disk_usable = false;
  std::string disk_error;      // why the disk cache is not used (or the last write that failed)
  int64_t memory_entries = 0;  // compiled images held in memory
  int64_t memory_hits = 0, disk_hits = 0, compiles = 0, disk_writes = 0;
  int64_t rejected_entries = 0;  // entry files that were corrupt, truncated or for another key
  double compile_seconds = 0;    // total time spent in NVRTC
  bool nvrtc_available = false;
  std::string nvrtc_version;  // "13.0", or why NVRTC is unavailable
};

/// Compiles and caches kernels. Thread-safe; concurrent requests for one image compile it once.
class JitEngine {
 public:
  /// `cuda` loads images for launches; null on machines without CUDA (images still compile).
  explicit JitEngine(cuda::CudaBackend* cuda);
  ~JitEngine();
  JitEngine(const JitEngine&) = delete;
  JitEngine& operator=(const JitEngine&) = delete;

  /// The cubin of `src` for `arch` ("sm_90"): from memory, from the disk cache or from NVRTC.
  /// NotImplementedError when NVRTC is unavailable (saying why); a compile error is a
  /// RuntimeError carrying NVRTC's log with the cited source lines.
  absl::StatusOr<std::shared_ptr<const std::string>> Image(const JitSource& src,
                                                           absl::string_view arch);
  /// The function `kernel` (an extern "C" name) of `src` compiled for CUDA device `device`.
  absl::StatusOr<void*> Function(const JitSource& src, absl::string_view kernel, int device);

  JitCacheInfo info() const;
  /// OK when NVRTC can be loaded, else why not (NotImplementedError). Cheap after the first call.
  absl::Status Available() const;
  /// Forgets compiled images and loaded functions (later requests compile or read the disk
  /// again; loaded code stays resident for launches already queued). `disk` also deletes the
  /// entry files.
  absl::Status Clear(bool disk);

  /// NVRTC's target name for a GPU of compute capability major.minor: "sm_<major><minor>".
  static std::string ArchOf(int major, int minor);

 private:
  using ImageOr = absl::StatusOr<std::shared_ptr<const std::string>>;
  ImageOr Build(const JitSource& src, absl::string_view arch, const std::string& key);
  void InitLocked() const;  // first use: cache directory and NVRTC version (under mu_)

  cuda::CudaBackend* cuda_;
  mutable std::mutex mu_;
  mutable bool initialized_ = false;
  mutable JitCacheInfo info_;
  uint64_t generation_ = 0;                                    // bumped by Clear
  std::map<std::string, std::shared_future<ImageOr>> images_;  // by key text
  std::map<const std::string*, void*> libraries_;  // by image (libraries are never unloaded)
  std::vector<std::shared_ptr<const std::string>> retained_;  // the images of loaded libraries
  std::map<std::tuple<const std::string*, std::string, int>, void*> functions_;
};

}  // namespace pygpukit
