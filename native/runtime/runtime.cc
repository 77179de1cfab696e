#include "runtime/runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "core/status.h"
#include "runtime/embedded_kernels.h"
#if PGK_WITH_CUDA
#include "core/cuda/cublaslt_api.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/nvrtc_api.h"
#else
namespace pygpukit::cuda {
// Built without CUDA: the backend never exists, but Runtime's unique_ptr needs a complete type.
class CudaBackend {};
}  // namespace pygpukit::cuda
#endif

#ifndef PGK_VERSION
#define PGK_VERSION "0.0.0"
#endif

namespace pygpukit {

const char* Version() { return PGK_VERSION; }

Runtime& Runtime::Get() {
  // Never destroyed: worker threads and driver handles must outlive every static that may still
  // release arrays during process exit.
  static Runtime* rt = new Runtime();
  return *rt;
}

namespace {

// PYGPUKIT_MEMORY_LIMIT / PYGPUKIT_PINNED_LIMIT, or 0 (none). A malformed value is reported on
// stderr once and ignored rather than failing the import.
int64_t LimitFromEnv(const char* name, int64_t total) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return 0;
  auto v = ParseMemoryLimit(env, total);
  if (!v.ok()) {
    std::fprintf(stderr, "pygpukit: ignoring %s: %s\n", name,
                 std::string(v.status().message()).c_str());
    return 0;
  }
  return *v;
}

int64_t TotalMemory(hal::Backend* b, int device) {
  auto p = b->properties(device);
  return p.ok() ? p->total_memory : 0;
}

// Pinned memory is taken from the OS's page-locked budget; a quarter of RAM unless told.
int64_t DefaultPinnedLimit(hal::Backend* cpu) {
  int64_t total = TotalMemory(cpu, 0);
  int64_t v = LimitFromEnv("PYGPUKIT_PINNED_LIMIT", total);
  return v > 0 ? v : total / 4;
}

}  // namespace

absl::StatusOr<Runtime::PerDevice> Runtime::MakeDevice(hal::Backend* b, PinnedPool* pinned,
                                                       Device d) {
  PerDevice p;
  PGK_ASSIGN_OR_RETURN(p.stream, b->CreateStream(d.index, 0));
  TransferOptions topt;  // tunable for benchmarking the staging pipeline
  if (const char* env = std::getenv("PYGPUKIT_STAGING_CHUNK")) {
    auto v = ParseMemoryLimit(env, 0);
    if (v.ok() && *v >= 4096) topt.chunk_bytes = static_cast<size_t>(*v);
  }
  if (const char* env = std::getenv("PYGPUKIT_STAGING_DEPTH")) {
    topt.chunks_in_flight = std::clamp(std::atoi(env), 1, 64);
  }
  PGK_ASSIGN_OR_RETURN(p.transfer, TransferEngine::Create(b, d, pinned, topt));
  PoolOptions options;
  options.limit_bytes = LimitFromEnv("PYGPUKIT_MEMORY_LIMIT", TotalMemory(b, d.index));
  if (const char* env = std::getenv("PYGPUKIT_MEMORY_POLICY")) {
    std::string v = env;
    if (v == "compact") {
      options.policy = PoolPolicy::kCompact;
    } else if (!v.empty() && v != "fast") {
      std::fprintf(stderr, "pygpukit: ignoring PYGPUKIT_MEMORY_POLICY=%s (fast or compact)\n", env);
    }
  }
  p.pool = std::make_unique<MemoryPool>(b, d, options);
  p.pool->set_transfer_engine(p.transfer.get());
  return p;
}

Runtime::Runtime() : cpu_(std::make_unique<cpu::CpuBackend>()) {
  if (const char* env = std::getenv("PYGPUKIT_DEVICE")) forced_ = env;
  cpu_pinned_ = std::make_unique<PinnedPool>(cpu_.get(), DefaultPinnedLimit(cpu_.get()));
  cpu_device_ = *MakeDevice(cpu_.get(), cpu_pinned_.get(), Device{DeviceType::kCPU, 0});
#if PGK_WITH_CUDA
  if (forced_ == "cpu") {
    cuda_status_ = NotImplementedError("cuda: disabled by PYGPUKIT_DEVICE=cpu");
  } else if (EmbeddedKernelImages().empty()) {
    cuda_status_ = NotImplementedError("cuda: this build has no CUDA kernels");
  } else {
    auto b = cuda::CudaBackend::Create();
    if (b.ok()) {
      cuda_ = std::move(*b);
      cuda_pinned_ = std::make_unique<PinnedPool>(cuda_.get(), DefaultPinnedLimit(cpu_.get()));
      for (int i = 0; i < cuda_->device_count(); ++i) {
        auto p = MakeDevice(cuda_.get(), cuda_pinned_.get(), Device{DeviceType::kCUDA, i});
        if (!p.ok()) {
          cuda_status_ = p.status();
          cuda_devices_.clear();
          cuda_pinned_.reset();
          cuda_.reset();
          break;
        }
        cuda_devices_.push_back(*std::move(p));
      }
    } else {
      cuda_status_ = b.status();
    }
  }
#else
  cuda_status_ = NotImplementedError("cuda: pygpukit was built without CUDA support");
#endif
  bool want_cuda = forced_.rfind("cuda", 0) == 0 || forced_.rfind("gpu", 0) == 0;
  const bool known = forced_.empty() || ParseDevice(forced_).ok();
  if (!known) {
    std::fprintf(stderr,
                 "pygpukit: ignoring PYGPUKIT_DEVICE=%s (expected cpu, cuda or cuda:N); the "
                 "default device is chosen as if it were unset\n",
                 forced_.c_str());
    want_cuda = false;
    forced_.clear();
  }
  if (want_cuda) {
    auto d = ParseDevice(forced_);
    default_device_ = d.ok() ? *d : Device{DeviceType::kCUDA, 0};
  } else if (forced_ != "cpu" && cuda_ != nullptr) {
    default_device_ = Device{DeviceType::kCUDA, 0};
  } else {
    default_device_ = Device{DeviceType::kCPU, 0};
  }
  dispatcher_ = std::make_unique<Dispatcher>(cpu_.get(), cuda_.get());
  jit_ = std::make_unique<JitEngine>(cuda_.get());
}

std::vector<Device> Runtime::devices() const {
  std::vector<Device> out;
  for (size_t i = 0; i < cuda_devices_.size(); ++i) {
    out.push_back(Device{DeviceType::kCUDA, static_cast<int>(i)});
  }
  out.push_back(Device{DeviceType::kCPU, 0});
  return out;
}

absl::StatusOr<const Runtime::PerDevice*> Runtime::per_device(Device d) const {
  // A present CUDA device straight away (every op asks, several times); the checks below
  // explain the others.
  if (d.is_cuda() && static_cast<size_t>(d.index) < cuda_devices_.size()) {
    return &cuda_devices_[d.index];
  }
  if (d.is_cpu()) {
    if (d.index != 0) return ValueError(absl::StrCat("device: no device cpu:", d.index));
    return &cpu_device_;
  }
  if (cuda_ == nullptr) {
    std::string why(cuda_status_.message());
    if (!forced_.empty() && forced_ != "cpu") {
      absl::StrAppend(&why, " (PYGPUKIT_DEVICE=", forced_, " asks for it)");
    }
    return RuntimeError(absl::StrCat("device ", d.ToString(), " is not available: ", why));
  }
  if (d.index < 0 || d.index >= static_cast<int>(cuda_devices_.size())) {
    return ValueError(absl::StrCat("device: no device ", d.ToString(), " (", cuda_devices_.size(),
                                   " CUDA device(s) present)"));
  }
  return &cuda_devices_[d.index];
}

absl::Status Runtime::CheckDevice(Device d) const { return per_device(d).status(); }

absl::StatusOr<hal::Backend*> Runtime::backend(DeviceType type) const {
  if (type == DeviceType::kCPU) return cpu_.get();
  PGK_RETURN_IF_ERROR(CheckDevice(Device{DeviceType::kCUDA, 0}));
#if PGK_WITH_CUDA
  return static_cast<hal::Backend*>(cuda_.get());
#else
  return cuda_status_;  // unreachable: CheckDevice fails without CUDA
#endif
}

namespace {
thread_local hal::Stream* scope_stream = nullptr;
}  // namespace

StreamScope::StreamScope(hal::Stream* stream) : previous_(std::exchange(scope_stream, stream)) {}
StreamScope::~StreamScope() { scope_stream = previous_; }
hal::Stream* StreamScope::Current() { return scope_stream; }

absl::StatusOr<hal::Stream*> Runtime::stream(Device d) const {
  if (scope_stream != nullptr && scope_stream->device() == d) return scope_stream;
  return default_stream(d);
}

absl::StatusOr<hal::Stream*> Runtime::default_stream(Device d) const {
  PGK_ASSIGN_OR_RETURN(const PerDevice* p, per_device(d));
  return p->stream.get();
}

absl::StatusOr<hal::Stream*> Runtime::AcquireStream(Device d, int priority, int sms) {
  PGK_RETURN_IF_ERROR(CheckDevice(d));
  PGK_ASSIGN_OR_RETURN(hal::Backend * b, backend(d.type));
  if (sms < 0) return ValueError(absl::StrCat("stream: negative SM partition ", sms));
  auto [least, greatest] = b->StreamPriorityRange();
  priority = std::clamp(priority, std::min(least, greatest), std::max(least, greatest));
  std::lock_guard<std::mutex> l(streams_mu_);
  const StreamKey key{static_cast<int>(d.type), d.index, priority, sms};
  auto& list = free_streams_[key];
  if (!list.empty()) {
    hal::Stream* s = list.back();
    list.pop_back();
    return s;
  }
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<hal::Stream> s,
                       sms > 0 ? b->CreatePartitionedStream(d.index, priority, sms)
                               : b->CreateStream(d.index, priority));
  pooled_streams_.emplace_back(std::move(s), key);
  return pooled_streams_.back().first.get();
}

absl::Status StreamWaitStream(hal::Stream& waiter, hal::Stream& producer) {
  if (&waiter == &producer) return absl::OkStatus();
  if (!(waiter.device() == producer.device())) {
    return ValueError(absl::StrCat("stream wait: streams on ", waiter.device().ToString(), " and ",
                                   producer.device().ToString()));
  }
  PGK_ASSIGN_OR_RETURN(hal::Backend * b, Runtime::Get().backend(waiter.device().type));
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<hal::Event> ev,
                       b->CreateEvent(waiter.device().index, /*timing=*/false));
  PGK_RETURN_IF_ERROR(b->Record(*ev, producer));
  return b->Wait(waiter, *ev);  // the event may die now: the wait keeps what it needs
}

void Runtime::ReleaseStream(hal::Stream* stream) {
  if (stream == nullptr) return;
  std::lock_guard<std::mutex> l(streams_mu_);
  for (const auto& [s, key] : pooled_streams_) {
    if (s.get() == stream) {
      free_streams_[key].push_back(stream);
      return;
    }
  }
}

absl::StatusOr<MemoryPool*> Runtime::pool(Device d) const {
  PGK_ASSIGN_OR_RETURN(const PerDevice* p, per_device(d));
  return p->pool.get();
}

absl::StatusOr<TransferEngine*> Runtime::transfer(Device d) const {
  PGK_ASSIGN_OR_RETURN(const PerDevice* p, per_device(d));
  return p->transfer.get();
}

absl::StatusOr<PinnedPool*> Runtime::pinned_pool(DeviceType type) const {
  if (type == DeviceType::kCPU) return cpu_pinned_.get();
  PGK_RETURN_IF_ERROR(CheckDevice(Device{DeviceType::kCUDA, 0}));
  return cuda_pinned_.get();
}

absl::StatusOr<hal::DeviceProperties> Runtime::properties(Device d) const {
  PGK_RETURN_IF_ERROR(CheckDevice(d));
  PGK_ASSIGN_OR_RETURN(hal::Backend * b, backend(d.type));
  return b->properties(d.index);
}

absl::Status Runtime::Synchronize(Device d) const {
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, stream(d));
  PGK_ASSIGN_OR_RETURN(hal::Backend * b, backend(d.type));
  const absl::Status waited = b->Synchronize(*s);
  // Reported here once, then forgotten: later waits on the device succeed again.
  const absl::Status failure = b->TaskFailure(d.index, /*take=*/true);
  return !failure.ok() ? failure : waited;
}

RuntimeInfo Runtime::info() const {
  RuntimeInfo i;
  i.version = Version();
  i.default_device = default_device_;
  i.cuda_available = cuda_ != nullptr;
  i.cuda_status = cuda_ != nullptr ? "ok" : std::string(cuda_status_.message());
  i.forced_device = forced_;
  i.kernel_archs = EmbeddedKernelArchs();
#if PGK_WITH_CUDA
  if (auto n = cuda::LoadNvrtc(); n.ok()) {
    i.nvrtc_available = true;
    i.nvrtc_version = absl::StrCat((*n)->major, ".", (*n)->minor);
  } else {
    i.nvrtc_version = std::string(n.status().message());
  }
  if (auto lt = cuda::LoadCublasLt(); lt.ok()) {
    i.cublaslt_available = true;
    i.cublaslt_version = absl::StrCat((*lt)->cublasLtGetVersion());
  } else {
    i.cublaslt_version = std::string(lt.status().message());
  }
#else
  i.nvrtc_version = i.cublaslt_version = "built without CUDA support";
#endif
  return i;
}

}  // namespace pygpukit
