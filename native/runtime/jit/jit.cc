#include "runtime/jit/jit.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "runtime/jit/cache_files.h"
#include "runtime/jit/jit_headers.h"
#if PGK_WITH_CUDA
#include "core/cuda/cuda_backend.h"
#include "core/cuda/nvrtc_api.h"
#endif

namespace pygpukit {
namespace {

#if PGK_WITH_CUDA
constexpr size_t kMaxEntryBytes = size_t{256} << 20;

// Runs NVRTC on `src`: the cubin, or the annotated log of the failure.
absl::StatusOr<std::string> RunNvrtc(const cuda::NvrtcApi& api, const JitSource& src,
                                     absl::string_view arch) {
  const std::string program = JitProgramName(src.name);
  const std::string file = absl::StrCat(program, ".cu");
  // The embedded headers (scalar semantics shared with the other backends, std stand-ins).
  std::vector<const char*> header_texts, header_names;
  for (const JitHeader& h : JitEmbeddedHeaders()) {
    header_texts.push_back(h.text);
    header_names.push_back(h.name);
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult r = api.nvrtcCreateProgram(&prog, src.source.c_str(), file.c_str(),
                                         static_cast<int>(header_texts.size()), header_texts.data(),
                                         header_names.data());
  if (r != NVRTC_SUCCESS) {
    return RuntimeError(
        absl::StrCat("jit: nvrtcCreateProgram(", file, "): ", api.nvrtcGetErrorString(r)));
  }
  std::vector<std::string> options = {absl::StrCat("--gpu-architecture=", arch), "--std=c++17"};
  options.insert(options.end(), src.options.begin(), src.options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  r = api.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (api.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (api.nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  std::string cubin;
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    r = api.nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS) {
      cubin.resize(size);
      r = api.nvrtcGetCUBIN(prog, cubin.data());
    }
    api.nvrtcDestroyProgram(&prog);
    if (r != NVRTC_SUCCESS) {
      return RuntimeError(absl::StrCat("jit: reading the cubin of ", file, " for ", arch, ": ",
                                       api.nvrtcGetErrorString(r)));
    }
    return cubin;
  }
  api.nvrtcDestroyProgram(&prog);
  return RuntimeError(absl::StrCat("jit: compiling ", file, " for ", arch, " failed (",
                                   api.nvrtcGetErrorString(r),
                                   "; options: ", absl::StrJoin(options, " "), "):\n",
                                   JitAnnotateLog(log, program, src.source)));
}
#endif

// Include options for the CUDA toolkit's headers, so that sources can include <cuda_fp16.h>,
// <cuda_bf16.h> and libcu++ (<cuda/std/...>; under include/cccl since CUDA 13): NVRTC has only a
// few headers built in. The toolkit is $CUDA_PATH, $CUDA_HOME or /usr/local/cuda, the first with
// include/cuda_fp16.h; none found: no options.
const std::vector<std::string>& CudaIncludeOptions() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> roots;
    for (const char* env : {"CUDA_PATH", "CUDA_HOME"}) {
      if (const char* v = std::getenv(env); v != nullptr && *v != '\0') roots.push_back(v);
    }
    roots.push_back("/usr/local/cuda");
    std::error_code ec;
    for (const std::string& r : roots) {
      const std::string inc = r + "/include";
      if (!std::filesystem::exists(inc + "/cuda_fp16.h", ec)) continue;
      std::vector<std::string> out = {"-I" + inc};
      if (std::filesystem::exists(inc + "/cccl/cuda/std", ec)) out.push_back("-I" + inc + "/cccl");
      return out;
    }
    return std::vector<std::string>();
  }();
  return options;
}

// What the key records of the compiler: NVRTC's version and a hash of the embedded headers,
// so that a library whose headers changed does not reuse images built from the old ones.
std::string CompilerId(int major, int minor) {
  static const std::string headers = [] {
    std::string all;
    for (const JitHeader& h : JitEmbeddedHeaders()) {
      absl::StrAppend(&all, h.name, "\n", h.size, "\n", absl::string_view(h.text, h.size));
    }
    return absl::StrFormat("%016x", JitHash(all));
  }();
  return absl::StrCat(major, ".", minor, "+headers-", headers);
}

}  // namespace

JitEngine::JitEngine(cuda::CudaBackend* cuda) : cuda_(cuda) {}
JitEngine::~JitEngine() = default;

std::string JitEngine::ArchOf(int major, int minor) { return absl::StrCat("sm_", major, minor); }

absl::Status JitEngine::Available() const {
#if PGK_WITH_CUDA
  absl::StatusOr<const cuda::NvrtcApi*> api = cuda::LoadNvrtc();
  if (api.ok()) return absl::OkStatus();
  return NotImplementedError(api.status().message());
#else
  return NotImplementedError("jit: pygpukit was built without CUDA support (no NVRTC)");
#endif
}

void JitEngine::InitLocked() const {
  if (initialized_) return;
  initialized_ = true;
#if PGK_WITH_CUDA
  if (auto api = cuda::LoadNvrtc(); api.ok()) {
    info_.nvrtc_available = true;
    info_.nvrtc_version = absl::StrCat((*api)->major, ".", (*api)->minor);
  } else {
    info_.nvrtc_version = std::string(api.status().message());
  }
#else
  info_.nvrtc_version = "built without CUDA support";
#endif
  const std::string base = CacheDirectory();
  if (base.empty()) {
    info_.disk_error = std::string(kNoCacheDirectory);
    return;
  }
  info_.directory = base + "/jit";
  info_.disk_usable = true;
}

JitEngine::ImageOr JitEngine::Build(const JitSource& src, absl::string_view arch,
                                    const std::string& key) {
#if PGK_WITH_CUDA
  PGK_ASSIGN_OR_RETURN(const cuda::NvrtcApi* api, cuda::LoadNvrtc());
  std::string path;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (info_.disk_usable) path = absl::StrCat(info_.directory, "/", JitEntryFileName(key));
  }
  if (!path.empty()) {
    absl::StatusOr<std::optional<std::string>> file = ReadSmallFile(path, kMaxEntryBytes);
    if (file.ok() && file->has_value()) {
      if (std::optional<std::string> image = ParseJitEntry(**file, key)) {
        std::lock_guard<std::mutex> l(mu_);
        ++info_.disk_hits;
        return std::make_shared<const std::string>(*std::move(image));
      }
      std::lock_guard<std::mutex> l(mu_);
      ++info_.rejected_entries;  // recompiled and overwritten below
    }
  }
  const auto start = std::chrono::steady_clock::now();
  PGK_ASSIGN_OR_RETURN(std::string cubin, RunNvrtc(*api, src, arch));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto image = std::make_shared<const std::string>(std::move(cubin));
  absl::Status wrote =
      path.empty() ? absl::OkStatus() : WriteFileAtomic(path, FormatJitEntry(key, *image));
  std::lock_guard<std::mutex> l(mu_);
  ++info_.compiles;
  info_.compile_seconds += seconds;
  if (!path.empty()) {
    if (wrote.ok()) {
      ++info_.disk_writes;
    } else {
      info_.disk_error = std::string(wrote.message());  // the cache stays usable in memory
    }
  }
  return image;
#else
  (void)src;
  (void)arch;
  (void)key;
  return NotImplementedError("jit: pygpukit was built without CUDA support (no NVRTC)");
#endif
}

absl::StatusOr<std::shared_ptr<const std::string>> JitEngine::Image(const JitSource& user,
                                                                    absl::string_view arch) {
  // The toolkit's headers, when present, are on the include path (and so in the key).
  JitSource src = user;
  for (const std::string& o : CudaIncludeOptions()) src.options.push_back(o);
#if PGK_WITH_CUDA
  absl::StatusOr<const cuda::NvrtcApi*> api = cuda::LoadNvrtc();
  if (!api.ok()) {
    return NotImplementedError(absl::StrCat(
        "jit: NVRTC is not available, so CUDA source cannot be compiled: ", api.status().message(),
        " (install the CUDA toolkit's NVRTC library, libnvrtc.so)"));
  }
  const std::string key = JitKeyText(src, arch, CompilerId((*api)->major, (*api)->minor));
#else
  const std::string key = JitKeyText(src, arch, "none");
#endif
  std::promise<ImageOr> promise;
  std::shared_future<ImageOr> future;
  bool builder = false;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    InitLocked();
    auto it = images_.find(key);
    if (it != images_.end()) {
      ++info_.memory_hits;
      future = it->second;
    } else {
      future = promise.get_future().share();
      images_.emplace(key, future);
      builder = true;
      generation = generation_;
    }
  }
  if (!builder) return future.get();  // compiled (or being compiled) by another call
  ImageOr result = RuntimeError("jit: compiling failed");
  try {
    result = Build(src, arch, key);
  } catch (const std::exception& e) {  // e.g. bad_alloc: waiters must still get an answer
    result =
        RuntimeError(absl::StrCat("jit: compiling ", JitProgramName(src.name), ".cu: ", e.what()));
  }
  if (!result.ok()) {
    // Failures are not cached: the next request tries again (e.g. after a full disk). After a
    // Clear the entry under this key may be another request's.
    std::lock_guard<std::mutex> l(mu_);
    if (generation == generation_) images_.erase(key);
  }
  promise.set_value(result);
  return result;
}

absl::StatusOr<void*> JitEngine::Function(const JitSource& src, absl::string_view kernel,
                                          int device) {
#if PGK_WITH_CUDA
  if (cuda_ == nullptr) return NotImplementedError("jit: no CUDA device to load kernels on");
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, cuda_->properties(device));
  const std::string arch = ArchOf(props.sm_major, props.sm_minor);
  PGK_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> image, Image(src, arch));
  // Libraries and functions are keyed by the image object, which `retained_` keeps alive (and
  // its address unique) for as long as the library is loaded.
  std::lock_guard<std::mutex> l(mu_);
  auto fkey = std::make_tuple(image.get(), std::string(kernel), device);
  if (auto it = functions_.find(fkey); it != functions_.end()) return it->second;
  void*& library = libraries_[image.get()];
  if (library == nullptr) {
    absl::StatusOr<void*> lib = cuda_->LoadLibrary(image->data());
    if (!lib.ok()) {
      libraries_.erase(image.get());
      return lib.status();
    }
    library = *lib;
    retained_.push_back(image);
  }
  absl::StatusOr<void*> fn = cuda_->GetFunction(library, std::string(kernel).c_str(), device);
  if (absl::IsNotFound(fn.status())) {
    return ValueError(absl::StrCat("jit: ", JitProgramName(src.name), ".cu defines no kernel '",
                                   kernel,
                                   "' (kernels need extern \"C\" __global__ to keep "
                                   "their names)"));
  }
  PGK_RETURN_IF_ERROR(fn.status());
  functions_.emplace(fkey, *fn);
  return *fn;
#else
  (void)src;
  (void)kernel;
  (void)device;
  return NotImplementedError("jit: pygpukit was built without CUDA support");
#endif
}

JitCacheInfo JitEngine::info() const {
  std::lock_guard<std::mutex> l(mu_);
  InitLocked();
  JitCacheInfo i = info_;
  i.memory_entries = static_cast<int64_t>(images_.size());
  return i;
}

absl::Status JitEngine::Clear(bool disk) {
  std::lock_guard<std::mutex> l(mu_);
  InitLocked();
  images_.clear();
  ++generation_;
  functions_.clear();
  libraries_.clear();  // loaded code stays resident (queued launches may still use it)
  if (!disk || !info_.disk_usable) return absl::OkStatus();
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(info_.directory, ec), end; !ec && it != end; it.increment(ec)) {
    // Only finished entries ("jit-<16 hex>.bin"): other processes' temporaries are theirs.
    const std::string name = it->path().filename().string();
    const bool entry = name.size() == 24 && name.rfind("jit-", 0) == 0 &&
                       name.compare(20, 4, ".bin") == 0 &&
                       name.find_first_not_of("0123456789abcdef", 4) == 20;
    if (entry) fs::remove(it->path(), ec);
    if (ec) break;
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return RuntimeError(absl::StrCat("jit: clearing ", info_.directory, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace pygpukit
