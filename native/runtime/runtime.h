// The Runtime: owns the backends, and per device a default stream, the memory pool and the
// transfer engine; a pinned host pool per backend; and the dispatcher. A process has one Runtime
// (Runtime::Get()); the Python module and C++ services share it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/hal/backend.h"
#include "runtime/dispatcher.h"
#include "runtime/jit/jit.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/pinned_pool.h"
#include "runtime/memory/transfer.h"

namespace pygpukit {

namespace cpu {
class CpuBackend;
}
namespace cuda {
class CudaBackend;
}

/// What the runtime found at start-up.
struct RuntimeInfo {
  std::string version;
  Device default_device;
  bool cuda_available = false;
  std::string cuda_status;    // why CUDA is unavailable, or "ok"
  std::string forced_device;  // value of PYGPUKIT_DEVICE ("" when unset)
  std::string kernel_archs;   // archs of the embedded kernels
  bool nvrtc_available = false;
  std::string nvrtc_version;  // "13.0" or the reason it is unavailable
  bool cublaslt_available = false;
  std::string cublaslt_version;  // "130000" or the reason it is unavailable
};

/// While alive, work this thread queues on the scope stream's device goes to that stream instead
/// of the device's default stream (the scheduler opens one around each task). Scopes nest; the
/// innermost wins.
class StreamScope {
 public:
  explicit StreamScope(hal::Stream* stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  /// The innermost scope's stream on this thread, or null.
  static hal::Stream* Current();

 private:
  hal::Stream* previous_;
};

/// Process-wide runtime.
class Runtime {
 public:
  /// The process's runtime, created on first use (backends probed, PYGPUKIT_DEVICE honoured).
  static Runtime& Get();

  /// Every usable device: cuda devices first when present, then the cpu.
  std::vector<Device> devices() const;
  /// Device used when none is given: cuda:0 when available, else cpu; PYGPUKIT_DEVICE forces.
  Device default_device() const { return default_device_; }
  /// OK when `d` exists; otherwise an error naming the device and why it is unavailable.
  absl::Status CheckDevice(Device d) const;

  /// The backend serving devices of `type`.
  absl::StatusOr<hal::Backend*> backend(DeviceType type) const;
  /// The stream work on `d` is queued on: the thread's StreamScope stream when it is on `d`,
  /// else the device's default stream.
  absl::StatusOr<hal::Stream*> stream(Device d) const;
  /// The device's default stream, whatever the thread's scope.
  absl::StatusOr<hal::Stream*> default_stream(Device d) const;
  /// A stream of `priority` (clamped to the device's range) for the caller's exclusive use
  /// until ReleaseStream. Streams are pooled and live as long as the runtime, so buffers that
  /// recorded a use on one never see it destroyed. `sms` > 0: its kernels are confined to a
  /// partition of that many SMs (hal::Backend::CreatePartitionedStream).
  absl::StatusOr<hal::Stream*> AcquireStream(Device d, int priority, int sms = 0);
  /// Returns a stream from AcquireStream to the pool.
  void ReleaseStream(hal::Stream* stream);
  /// The memory pool of `d`.
  absl::StatusOr<MemoryPool*> pool(Device d) const;
  /// The transfer engine of `d` (host <-> device copies).
  absl::StatusOr<TransferEngine*> transfer(Device d) const;
  /// The pinned host pool shared by the devices of `type`.
  absl::StatusOr<PinnedPool*> pinned_pool(DeviceType type) const;
  absl::StatusOr<hal::DeviceProperties> properties(Device d) const;
  /// Waits for all queued work on `d`'s current stream (see stream()), and reports (once) the
  /// failure of work that already ran on `d` (hal::Backend::TaskFailure: a CPU kernel that
  /// threw).
  absl::Status Synchronize(Device d) const;
  Dispatcher& dispatcher() const { return *dispatcher_; }
  /// The NVRTC JIT engine (compiles and caches kernels from CUDA C++ source).
  JitEngine& jit() const { return *jit_; }
  cpu::CpuBackend& cpu_backend() const { return *cpu_; }
  /// The CUDA backend, or nullptr when CUDA is unavailable.
  cuda::CudaBackend* cuda_backend() const { return cuda_.get(); }

  RuntimeInfo info() const;

 private:
  Runtime();
  struct PerDevice {
    std::unique_ptr<hal::Stream> stream;
    std::unique_ptr<TransferEngine> transfer;
    std::unique_ptr<MemoryPool> pool;
  };
  absl::StatusOr<PerDevice> MakeDevice(hal::Backend* backend, PinnedPool* pinned, Device d);
  absl::StatusOr<const PerDevice*> per_device(Device d) const;

  std::unique_ptr<cpu::CpuBackend> cpu_;
  std::unique_ptr<cuda::CudaBackend> cuda_;
  // Pooled streams outlive the pools below, which may hold them as recorded uses.
  std::mutex streams_mu_;
  // Every acquired stream, with the key it was asked for.
  using StreamKey = std::tuple<int, int, int, int>;  // device type, index, priority, sms asked
  std::vector<std::pair<std::unique_ptr<hal::Stream>, StreamKey>> pooled_streams_;
  std::map<StreamKey, std::vector<hal::Stream*>> free_streams_;  // free for reuse
  std::unique_ptr<PinnedPool> cpu_pinned_, cuda_pinned_;
  absl::Status cuda_status_;
  std::string forced_;
  Device default_device_;
  PerDevice cpu_device_;
  std::vector<PerDevice> cuda_devices_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<JitEngine> jit_;
};

/// Makes later work on `waiter` wait for the work queued on `producer` so far, without blocking
/// the host (an event recorded on `producer`). Both streams are on one device.
absl::Status StreamWaitStream(hal::Stream& waiter, hal::Stream& producer);

/// Library version string.
const char* Version();

}  // namespace pygpukit
