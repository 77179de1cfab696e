// CUDA backend: the driver API (loaded at run time), one primary context per device, streams with
// priorities, events, module loading of nvcc-built fatbins and cuLaunchKernelEx.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/hal/backend.h"

namespace pygpukit::cuda {

/// The CUDA driver backend.
class CudaBackend final : public hal::Backend {
 public:
  /// Loads the driver and enumerates devices; the error says why CUDA is unusable.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create();
  ~CudaBackend() override;

  DeviceType type() const override { return DeviceType::kCUDA; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  absl::StatusOr<hal::DeviceProperties> properties(int device) const override;

  absl::StatusOr<void*> RawAllocate(int device, size_t bytes) override;
  absl::Status RawFree(int device, void* ptr) override;
  absl::StatusOr<void*> RawAllocateHost(size_t bytes) override;
  absl::Status RawFreeHost(void* ptr) override;
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int device) const override;

  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(int device, int priority) override;
  /// A stream of a green context holding `sms` SMs (rounded up to the driver's granularity).
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreatePartitionedStream(int device, int priority,
                                                                       int sms) override;
  std::pair<int, int> StreamPriorityRange() const override { return priority_range_; }
  absl::StatusOr<std::unique_ptr<hal::Event>> CreateEvent(int device, bool timing) override;

  absl::Status Record(hal::Event& event, hal::Stream& stream) override;
  absl::Status Wait(hal::Stream& stream, hal::Event& event) override;
  absl::StatusOr<bool> Query(hal::Event& event) override;
  absl::Status Synchronize(hal::Event& event) override;
  absl::Status Synchronize(hal::Stream& stream) override;
  absl::StatusOr<float> ElapsedMs(hal::Event& start, hal::Event& end) override;

  absl::Status CopyAsync(void* dst, const void* src, size_t bytes, hal::CopyKind kind,
                         hal::Stream& stream) override;
  absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, hal::Stream& stream) override;
  absl::Status WriteWordAsync(uint32_t* dst, uint32_t value, hal::Stream& stream) override;

  /// Loads a fatbin/cubin/PTX image as a context-independent library (CUlibrary).
  absl::StatusOr<void*> LoadLibrary(const void* image);
  /// The CUfunction of kernel `name` of `library` for `device`; NotFound when absent.
  absl::StatusOr<void*> GetFunction(void* library, const char* name, int device);
  /// Sets the dynamic shared memory limit of a function (needed above 48 KiB).
  absl::Status SetMaxDynamicSharedMemory(void* function, int device, int bytes);
  /// How many blocks of `block` threads (and `shared_bytes` of dynamic shared memory) of
  /// `function` one SM of `device` holds at once (its registers and shared memory decide).
  absl::StatusOr<int> ResidentBlocks(void* function, int device, int block, size_t shared_bytes);
  /// Launches `function` on `stream` through cuLaunchKernelEx. `queued`: the launch may go
  /// through the device's launch queue (core/launch_queue.h): its parameters are copied and the
  /// launcher thread makes it, so a failure is reported by a later call on the device (every
  /// later one: the device's queue keeps the error). Otherwise the caller makes it, after the
  /// queued ones, and gets its outcome.
  absl::Status Launch(void* function, const hal::LaunchDims& dims, hal::Stream& stream, void** args,
                      bool queued = false);
  /// Returns when every launch queued on `device` so far has been made; the queue's error.
  /// Every other use of a stream or of device memory that the driver makes at once (records,
  /// waits, copies, frees, synchronization, handles given to other libraries) calls it first,
  /// still does its work when it fails (callers fall back on that work: a synchronize where a
  /// record failed) and returns the queue's error afterwards.
  absl::Status Drain(int device) override;
  /// Launches the device's launcher thread has made (0 when its launches are not queued).
  uint64_t QueuedLaunches(int device) const;
  /// Makes the device's primary context current on this thread (for libraries such as cuBLASLt).
  absl::Status MakeCurrent(int device);

  // Streams of other libraries (DLPack and CUDA array interface exchanges), as the integer
  // handles those protocols pass: a CUstream, or 1 / 2 for the legacy / per-thread default one.
  absl::StatusOr<int> PointerDevice(uintptr_t ptr) override;
  absl::StatusOr<uintptr_t> ExternalHandle(hal::Stream& stream) override;
  absl::Status WaitForExternal(hal::Stream& waiter, uintptr_t external) override;
  absl::Status ExternalWaitsFor(uintptr_t external, hal::Stream& producer) override;

 private:
  struct DeviceState;
  CudaBackend();
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::pair<int, int> priority_range_{0, 0};
};

}  // namespace pygpukit::cuda
