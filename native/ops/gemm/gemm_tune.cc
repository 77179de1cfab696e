// The autotuning switch and the per-device cache registry. Compiled in every build: without
// CUDA there are no CUDA devices, so the caches stay empty and the switch only records a wish.
#include "ops/gemm/gemm_tune.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/jit/cache_files.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

// A malformed value is reported once and leaves autotuning off, as other PYGPUKIT_* variables
// are handled (runtime.cc): a typo must not fail the import.
bool EnabledFromEnv() {
  const char* v = std::getenv("PYGPUKIT_GEMM_AUTOTUNE");
  if (v == nullptr) return false;
  const std::string s = absl::AsciiStrToLower(v);
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (!s.empty() && s != "0" && s != "false" && s != "off" && s != "no") {
    std::fprintf(stderr, "pygpukit: ignoring PYGPUKIT_GEMM_AUTOTUNE=%s (1 or 0)\n", v);
  }
  return false;
}

std::atomic<bool>& EnabledFlag() {
  static std::atomic<bool> flag{EnabledFromEnv()};
  return flag;
}

struct Registry {
  std::mutex mu;
  std::map<int, std::unique_ptr<GemmTuneCache>> caches;  // by CUDA device index
};

// Never destroyed, like the Runtime: matmuls may run during process exit.
Registry& Caches() {
  static Registry* r = new Registry();
  return *r;
}

GemmTuneCache* CacheOf(int index) {
  Registry& r = Caches();
  std::lock_guard<std::mutex> l(r.mu);
  std::unique_ptr<GemmTuneCache>& c = r.caches[index];
  if (c == nullptr) c = std::make_unique<GemmTuneCache>();
  return c.get();
}

absl::Status NeedsCuda(Device d, absl::string_view what) {
  if (d.is_cuda()) return absl::OkStatus();
  return ValueError(absl::StrCat(what, ": ", d.ToString(), " is not a CUDA device"));
}

}  // namespace

bool GemmAutotuneEnabled() { return EnabledFlag().load(std::memory_order_relaxed); }

void SetGemmAutotune(bool enabled) { EnabledFlag().store(enabled, std::memory_order_relaxed); }

absl::StatusOr<std::pair<TuneCacheHeader, std::string>> GemmTuneIdentity(Device device) {
  PGK_RETURN_IF_ERROR(NeedsCuda(device, "gemm tune cache"));
  Runtime& rt = Runtime::Get();
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, rt.properties(device));
  const RuntimeInfo info = rt.info();
  TuneCacheHeader h;
  h.pygpukit_version = info.version;
  h.device_name = props.name;
  h.sm = props.sm_major * 10 + props.sm_minor;
  h.driver_version = props.driver_version;
  h.cublaslt_version = info.cublaslt_version;
  h.kernel_archs = info.kernel_archs;
  const std::string dir = CacheDirectory();
  std::string path;
  if (!dir.empty()) path = absl::StrCat(dir, "/", TuneCacheFileName(props.name, h.sm));
  return std::make_pair(std::move(h), std::move(path));
}

absl::StatusOr<GemmTuneCache*> GemmTuneCacheFor(Device device) {
  PGK_RETURN_IF_ERROR(NeedsCuda(device, "gemm tune cache"));
  GemmTuneCache* cache = CacheOf(device.index);
  if (!cache->loaded()) {
    // Two threads may both get here; Load keeps the first and ignores the second.
    PGK_ASSIGN_OR_RETURN(auto identity, GemmTuneIdentity(device));
    cache->Load(identity.first, identity.second);
  }
  return cache;
}

absl::StatusOr<GemmTuneInfo> GemmTuneCacheInfo(Device device) {
  GemmTuneInfo info;
  info.enabled = GemmAutotuneEnabled();
  info.directory = CacheDirectory();
  PGK_RETURN_IF_ERROR(Runtime::Get().CheckDevice(device));
  if (!device.is_cuda()) {
    info.cache.disk_usable = false;
    info.cache.disk_error = "the CPU backend has one matmul kernel: nothing to tune";
    return info;
  }
  info.cache = CacheOf(device.index)->stats();
  if (!info.cache.loaded) {
    PGK_ASSIGN_OR_RETURN(auto identity, GemmTuneIdentity(device));
    info.cache.path = identity.second;
    if (info.cache.path.empty()) {
      info.cache.disk_usable = false;
      info.cache.disk_error = std::string(kNoCacheDirectory);
    }
  }
  return info;
}

absl::Status ClearGemmTuneCache(bool disk) {
  absl::Status first;
  for (Device d : Runtime::Get().devices()) {
    if (!d.is_cuda()) continue;
    if (absl::Status st = CacheOf(d.index)->Clear(disk); !st.ok()) {
      first.Update(RuntimeError(absl::StrCat("clear_gemm_tune_cache: ", st.message())));
    }
    if (!disk) continue;
    // The file the device would use now, which differs from the loaded one when the cache
    // directory changed since.
    absl::StatusOr<std::pair<TuneCacheHeader, std::string>> identity = GemmTuneIdentity(d);
    if (!identity.ok() || identity->second.empty()) continue;
    std::error_code ec;
    std::filesystem::remove(identity->second, ec);
    if (ec) {
      first.Update(RuntimeError(absl::StrCat("clear_gemm_tune_cache: cannot delete ",
                                             identity->second, ": ", ec.message())));
    }
  }
  return first;
}

}  // namespace pygpukit::ops
