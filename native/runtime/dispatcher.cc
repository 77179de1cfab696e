#include "runtime/dispatcher.h"

#include <array>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "core/status.h"
#include "runtime/blocking.h"
#include "runtime/embedded_kernels.h"
#include "runtime/trace/tracer.h"
#if PGK_WITH_CUDA
#include "core/cuda/cuda_backend.h"
#endif

namespace pygpukit {

namespace {
thread_local LaunchGate* current_gate = nullptr;

// Runs `launch` between the thread's gate hooks.
template <typename F>
absl::Status Gated(hal::Stream& stream, F&& launch) {
  LaunchGate* gate = current_gate;
  if (gate == nullptr) return launch();
  PGK_RETURN_IF_ERROR(gate->BeforeLaunch(stream));
  absl::Status s = launch();
  gate->AfterLaunch(stream, s);
  return s;
}

// Runs `launch` and records it in the trace as `kind` named `name` (with its device time from
// an event pair on `backend`, when a profiling session is open). Failed launches leave no record.
template <typename F>
absl::Status Traced(TraceKind kind, const std::string* name, hal::Backend* backend,
                    hal::Stream& stream, LaunchCost cost, F&& launch) {
  Tracer& tracer = Tracer::Get();
  if (!tracer.enabled()) return launch();
  TraceEntry r;
  r.begin = Tracer::Ticks();
  std::unique_ptr<Tracer::Timing> timing;
  const bool session = tracer.profiling();
  if (session && backend != nullptr) timing = tracer.StartTiming(*backend, stream);
  absl::Status s = launch();
  if (!s.ok()) return s;
  // The host span's end only in profiling sessions: outside them a launch is an instant, one
  // clock read cheaper (reads are the largest part of a record's cost).
  if (session) r.end = Tracer::Ticks();
  r.kind = kind;
  r.name = name;
  r.device = stream.device();
  r.stream = reinterpret_cast<uintptr_t>(&stream);
  r.bytes = cost.bytes;
  r.flops = cost.flops;
  const uint64_t seq = tracer.Add(r);
  if (timing != nullptr) tracer.EndTiming(std::move(timing), stream, seq);
  return s;
}
}  // namespace

hal::Backend* Dispatcher::BackendOf(hal::Stream& stream) const {
#if PGK_WITH_CUDA
  if (stream.device().is_cuda()) return cuda_;
#endif
  return stream.device().is_cpu() ? static_cast<hal::Backend*>(cpu_) : nullptr;
}

LaunchGateScope::LaunchGateScope(LaunchGate* gate) : previous_(std::exchange(current_gate, gate)) {}
LaunchGateScope::~LaunchGateScope() { current_gate = previous_; }
LaunchGate* LaunchGateScope::Current() { return current_gate; }

namespace {
std::atomic<uint64_t> next_dispatcher_id{1};

// A thread's recently counted kernels: the name as stored in the map (compared in full, so a
// name at a reused address or two names at one address count right) and its counter.
struct CounterSlot {
  uint64_t dispatcher = 0;
  const std::string* name = nullptr;
  std::atomic<int64_t>* counter = nullptr;
  const std::string* traced = nullptr;  // the tracer's interned copy
};
thread_local std::array<CounterSlot, 16> counter_slots;
}  // namespace

Dispatcher::Dispatcher(cpu::CpuBackend* cpu, cuda::CudaBackend* cuda)
    : cpu_(cpu), cuda_(cuda), id_(next_dispatcher_id.fetch_add(1)) {}
Dispatcher::~Dispatcher() = default;

const std::string* Dispatcher::Count(absl::string_view kernel) {
  // Names are mostly literals: their address picks the slot.
  CounterSlot& slot =
      counter_slots[(reinterpret_cast<uintptr_t>(kernel.data()) >> 3) % counter_slots.size()];
  if (slot.dispatcher != id_ || *slot.name != kernel) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = counters_.try_emplace(std::string(kernel), 0).first;
    slot = CounterSlot{id_, &it->first, &it->second, Tracer::Get().Intern(kernel)};
  }
  slot.counter->fetch_add(1, std::memory_order_relaxed);
  return slot.traced;
}

absl::Status Dispatcher::LaunchHost(hal::Stream& stream, absl::string_view kernel,
                                    std::function<void()> task, LaunchCost cost,
                                    int64_t held_bytes) {
  if (!stream.device().is_cpu()) {
    return ValueError(absl::StrCat("dispatch ", kernel, ": host kernel on ",
                                   stream.device().ToString(), " stream"));
  }
  host_tasks_.fetch_add(1, std::memory_order_relaxed);
  if (cpu_->Crowded(stream)) {  // backpressure: the queue keeps its tasks' arrays alive
    BlockingRegion unlocked;
    cpu_->WaitForRoom(stream);
  }
  const std::string* name = Count(kernel);
  return Gated(stream, [&] {
    return Traced(TraceKind::kHostTask, name, cpu_, stream, cost,
                  [&] { return cpu_->Enqueue(stream, std::move(task), name, held_bytes); });
  });
}

absl::StatusOr<void*> Dispatcher::DeviceFunction(absl::string_view kernel, int device) {
#if PGK_WITH_CUDA
  std::lock_guard<std::mutex> l(mu_);
  auto key = std::make_pair(std::string(kernel), device);
  if (auto it = functions_.find(key); it != functions_.end()) return it->second;
  if (!libraries_loaded_) {
    libraries_loaded_ = true;
    for (const EmbeddedImage& img : EmbeddedKernelImages()) {
      auto lib = cuda_->LoadLibrary(img.data);
      if (!lib.ok()) {
        library_status_ = absl::Status(lib.status().code(),
                                       absl::StrCat(lib.status().message(), " [image ", img.name,
                                                    ", built for ", EmbeddedKernelArchs(), "]"));
        break;
      }
      libraries_.push_back(*lib);
    }
  }
  PGK_RETURN_IF_ERROR(library_status_);
  for (void* lib : libraries_) {
    auto fn = cuda_->GetFunction(lib, key.first.c_str(), device);
    if (fn.ok()) {
      functions_.emplace(key, *fn);
      return *fn;
    }
    if (fn.status().code() != absl::StatusCode::kNotFound) return fn.status();
  }
  return NotImplementedError(
      absl::StrCat("dispatch: no CUDA kernel named ", kernel, " in the embedded images"));
#else
  return NotImplementedError(absl::StrCat("dispatch ", kernel, ": built without CUDA kernels"));
#endif
}

absl::Status Dispatcher::LaunchDevice(hal::Stream& stream, absl::string_view kernel,
                                      const hal::LaunchDims& dims, void** args, LaunchCost cost,
                                      LaunchMode mode) {
#if PGK_WITH_CUDA
  if (cuda_ == nullptr || !stream.device().is_cuda()) {
    return ValueError(absl::StrCat("dispatch ", kernel, ": device kernel on ",
                                   stream.device().ToString(), " stream"));
  }
  PGK_ASSIGN_OR_RETURN(void* fn, DeviceFunction(kernel, stream.device().index));
  return LaunchFunction(stream, kernel, fn, dims, args, cost, mode);
#else
  (void)mode;
  (void)cost;
  (void)dims;
  (void)args;
  (void)stream;
  return NotImplementedError(absl::StrCat("dispatch ", kernel, ": built without CUDA kernels"));
#endif
}

absl::StatusOr<int> Dispatcher::ResidentBlocks(void* function, int device, int block) {
#if PGK_WITH_CUDA
  if (cuda_ == nullptr) return NotImplementedError("occupancy: CUDA is not available");
  return cuda_->ResidentBlocks(function, device, block, 0);
#else
  (void)function;
  (void)device;
  (void)block;
  return NotImplementedError("occupancy: built without CUDA support");
#endif
}

absl::Status Dispatcher::LaunchFunction(hal::Stream& stream, absl::string_view kernel,
                                        void* function, const hal::LaunchDims& dims, void** args,
                                        LaunchCost cost, LaunchMode mode) {
#if PGK_WITH_CUDA
  if (cuda_ == nullptr || !stream.device().is_cuda()) {
    return ValueError(absl::StrCat("dispatch ", kernel, ": device kernel on ",
                                   stream.device().ToString(), " stream"));
  }
  device_kernels_.fetch_add(1, std::memory_order_relaxed);
  const std::string* name = Count(kernel);
  constexpr unsigned kDefaultSharedLimit = 48 * 1024;
  if (dims.shared_bytes > kDefaultSharedLimit) {
    std::lock_guard<std::mutex> l(mu_);
    unsigned& limit = shared_limit_[function];
    if (limit < dims.shared_bytes) {
      PGK_RETURN_IF_ERROR(cuda_->SetMaxDynamicSharedMemory(function, stream.device().index,
                                                           static_cast<int>(dims.shared_bytes)));
      limit = dims.shared_bytes;
    }
  }
  const bool queued =
      mode == LaunchMode::kQueued && current_gate == nullptr && !Tracer::Get().profiling();
  return Gated(stream, [&] {
    return Traced(TraceKind::kKernel, name, cuda_, stream, cost,
                  [&] { return cuda_->Launch(function, dims, stream, args, queued); });
  });
#else
  (void)mode;
  (void)cost;
  (void)function;
  (void)dims;
  (void)args;
  (void)stream;
  return NotImplementedError(absl::StrCat("dispatch ", kernel, ": built without CUDA support"));
#endif
}

absl::Status Dispatcher::LaunchLibrary(hal::Stream& stream, absl::string_view what,
                                       const std::function<absl::Status()>& call, LaunchCost cost) {
  library_calls_.fetch_add(1, std::memory_order_relaxed);
  const std::string* name = Count(what);
  hal::Backend* backend = BackendOf(stream);
  return Gated(stream,
               [&] { return Traced(TraceKind::kLibrary, name, backend, stream, cost, call); });
}

absl::Status Dispatcher::LaunchCopy(hal::Stream& stream, absl::string_view what,
                                    const std::function<absl::Status()>& call, int64_t bytes) {
  const std::string* name = Count(what);
  return Gated(stream, [&] {
    return Traced(TraceKind::kCopy, name, BackendOf(stream), stream, LaunchCost{0, bytes}, call);
  });
}

int64_t Dispatcher::QueuedLaunches() const {
  int64_t n = 0;
#if PGK_WITH_CUDA
  if (cuda_ != nullptr) {
    for (int d = 0; d < cuda_->device_count(); ++d) {
      n += static_cast<int64_t>(cuda_->QueuedLaunches(d));
    }
  }
#endif
  return n;
}

DispatchStats Dispatcher::stats() const {
  DispatchStats s;
  s.host_tasks = host_tasks_.load(std::memory_order_relaxed);
  s.device_kernels = device_kernels_.load(std::memory_order_relaxed);
  s.library_calls = library_calls_.load(std::memory_order_relaxed);
  s.copies = copies_.load(std::memory_order_relaxed);
  s.queued_kernels = QueuedLaunches() - queued_base_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [name, counter] : counters_) {
    if (int64_t n = counter.load(std::memory_order_relaxed); n > 0) s.per_kernel.emplace(name, n);
  }
  return s;
}

void Dispatcher::ResetStats() {
  host_tasks_.store(0, std::memory_order_relaxed);
  device_kernels_.store(0, std::memory_order_relaxed);
  library_calls_.store(0, std::memory_order_relaxed);
  copies_.store(0, std::memory_order_relaxed);
  queued_base_.store(QueuedLaunches(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, counter] : counters_) counter.store(0, std::memory_order_relaxed);
}

}  // namespace pygpukit
