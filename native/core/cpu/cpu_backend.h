// CPU backend: host memory, and streams as in-order work queues each drained by its own worker
// thread, with events, so that stream ordering and cross-stream waits behave as on CUDA.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/hal/backend.h"

namespace pygpukit::cpu {

/// The host backend. One device, "cpu".
class CpuBackend final : public hal::Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

  DeviceType type() const override { return DeviceType::kCPU; }
  int device_count() const override { return 1; }
  absl::StatusOr<hal::DeviceProperties> properties(int device) const override;

  absl::StatusOr<void*> RawAllocate(int device, size_t bytes) override;
  absl::Status RawFree(int device, void* ptr) override;
  absl::StatusOr<void*> RawAllocateHost(size_t bytes) override;
  absl::Status RawFreeHost(void* ptr) override;
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int device) const override;
  absl::Status CheckForeignRange(int device, const void* ptr, size_t bytes) override;

  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(int device, int priority) override;
  /// A stream whose kernels use at most `sms` worker threads.
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreatePartitionedStream(int device, int priority,
                                                                       int sms) override;
  std::pair<int, int> StreamPriorityRange() const override { return {0, -5}; }
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

  /// Appends a host task to the stream. The task runs on the stream's worker after all earlier
  /// work; an exception it throws becomes the device's failure (TaskFailure), naming `name`
  /// (the kernel; null for runtime work such as copies and event markers). `held_bytes`: the
  /// memory the task keeps alive until it has run (counted by Crowded).
  absl::Status Enqueue(hal::Stream& stream, std::function<void()> task,
                       const std::string* name = nullptr, int64_t held_bytes = 0);
  /// True when `stream` holds so many unfinished tasks, or so much memory kept alive by them,
  /// that a kernel launch should wait (WaitForRoom) before queueing more.
  bool Crowded(hal::Stream& stream) const;
  /// Blocks until the stream's unfinished work is down to half the bounds (at once on the
  /// stream's own worker). Callers release what other threads may need first (the GIL).
  void WaitForRoom(hal::Stream& stream);
  /// The first host task that threw since the failure was last taken, naming its kernel. Also
  /// what Synchronize(stream) returns.
  absl::Status TaskFailure(int device, bool take) override;

  struct Failures;

 private:
  std::shared_ptr<Failures> failures_;  // shared with the streams, which may outlive a backend
};

}  // namespace pygpukit::cpu
