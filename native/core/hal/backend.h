// The backend interface (HAL). Two implementations: cpu/ (host memory, streams as in-order worker
// queues) and cuda/ (driver API loaded at run time). Everything above core/ talks to devices only
// through this interface, so stream ordering and events behave the same on both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/status.h"

namespace pygpukit::hal {

/// What a device is and can do.
struct DeviceProperties {
  std::string name;
  int sm_major = 0, sm_minor = 0;  // compute capability (0.0 on the CPU)
  int multiprocessors = 0;         // SMs, or ParallelFor's threads on the CPU
  int64_t total_memory = 0;        // bytes
  int64_t l2_cache_bytes = 0;
  int64_t max_shared_memory_per_block = 0;
  int driver_version = 0;  // e.g. 13000; 0 on the CPU
};

/// An in-order queue of work on one device.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  /// Lower value = higher priority (CUDA convention).
  virtual int priority() const = 0;
  /// Backend handle (CUstream on CUDA; the queue object on CPU).
  virtual void* native_handle() const = 0;
  /// SMs (CPU: worker threads) this stream's kernels are confined to; 0: the whole device.
  virtual int sm_count() const { return 0; }
};

/// A marker recorded into a stream; completes when all work before it has finished.
class Event {
 public:
  virtual ~Event() = default;
  virtual Device device() const = 0;
  virtual void* native_handle() const = 0;
};

/// Grid / block / shared memory / cluster shape of one device kernel launch.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  unsigned cluster[3] = {0, 0, 0};  // 0 = no cluster attribute
};

/// Direction of a memory copy.
enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

/// One backend (a family of devices).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;
  virtual absl::StatusOr<DeviceProperties> properties(int device) const = 0;

  /// Raw device memory from the OS / driver. Only allocators call these.
  virtual absl::StatusOr<void*> RawAllocate(int device, size_t bytes) = 0;
  virtual absl::Status RawFree(int device, void* ptr) = 0;
  /// Page-locked host memory the device can DMA to and from (plain aligned host memory on the
  /// CPU backend). Only the pinned pool calls these.
  virtual absl::StatusOr<void*> RawAllocateHost(size_t bytes) = 0;
  virtual absl::Status RawFreeHost(void* ptr) = 0;
  /// (free, total) bytes of device memory as the driver sees it.
  virtual absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int device) const = 0;
  /// Checks that [ptr, ptr + bytes) is memory of `device` this process can address, before an
  /// array is made over memory from outside (DLPack, the array interfaces): ValueError naming
  /// the range otherwise. The CPU backend asks the kernel whether every page is mapped; backends
  /// that cannot tell accept the range (a bad device address faults there, not on the host).
  virtual absl::Status CheckForeignRange(int /*device*/, const void* /*ptr*/, size_t /*bytes*/) {
    return absl::OkStatus();
  }

  /// Creates a stream; `priority` is clamped to the device's range.
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream(int device, int priority) = 0;
  /// Creates a stream whose kernels run on a partition of `sms` of the device's SMs (CUDA: a
  /// green context; CPU: that many worker threads), rounded up to the device's granularity;
  /// sm_count() tells the size it got. Streams without a partition keep using every SM, so a
  /// partition bounds what its stream takes, not what others may use. Partitions of one size
  /// are the same SMs; on CUDA those of more than half the device come from one end and smaller
  /// ones from the other, so a small and a large one that fit together are disjoint, while two
  /// small or two large ones overlap. A request for the whole device gives a plain stream.
  /// NotImplementedError where the backend or driver cannot.
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreatePartitionedStream(int /*device*/,
                                                                          int /*priority*/,
                                                                          int /*sms*/) {
    return NotImplementedError("stream: this backend cannot partition its device");
  }
  /// Range of stream priorities as (least, greatest); greatest is numerically lowest.
  virtual std::pair<int, int> StreamPriorityRange() const = 0;
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateEvent(int device, bool timing) = 0;

  /// Records `event` at the current tail of `stream`.
  virtual absl::Status Record(Event& event, Stream& stream) = 0;
  /// Makes later work on `stream` wait for `event` (no host blocking).
  virtual absl::Status Wait(Stream& stream, Event& event) = 0;
  /// True when the event has completed (or was never recorded).
  virtual absl::StatusOr<bool> Query(Event& event) = 0;
  /// Blocks the host until the event has completed.
  virtual absl::Status Synchronize(Event& event) = 0;
  /// Blocks the host until all work on the stream has finished.
  virtual absl::Status Synchronize(Stream& stream) = 0;
  /// The failure of work that already ran on `device` and has not been taken yet, where
  /// failures do not surface as errors of the backend's own calls: a CPU kernel that threw.
  /// Reads check it after waiting for the work they follow (its outputs are incomplete), a
  /// task's completion does too, and gp.synchronize() takes it (`take`). OK on CUDA, where a
  /// fault makes every later driver call fail instead.
  virtual absl::Status TaskFailure(int /*device*/, bool /*take*/) { return absl::OkStatus(); }
  /// Milliseconds between two completed timing events.
  virtual absl::StatusOr<float> ElapsedMs(Event& start, Event& end) = 0;

  /// Stream-ordered copy of `bytes`; host pointers must stay valid until the copy completes.
  virtual absl::Status CopyAsync(void* dst, const void* src, size_t bytes, CopyKind kind,
                                 Stream& stream) = 0;
  /// Stream-ordered byte fill.
  virtual absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, Stream& stream) = 0;
  /// Stream-ordered store of one 4-byte-aligned word of device memory, made without a kernel
  /// (CUDA: by the device's front end), so it lands while every SM is busy: how the host signals
  /// running kernels. NotImplementedError where the driver cannot.
  virtual absl::Status WriteWordAsync(uint32_t* dst, uint32_t value, Stream& stream) = 0;

  // Exchanges with other libraries (DLPack, the array interfaces), whose streams travel as the
  // integer handles those protocols pass. Backends without such streams keep the defaults.
  /// Returns once every launch queued on `device` so far has been made (backends that queue
  /// launches on a thread of their own), with the queue's error: before a pointer is handed over.
  virtual absl::Status Drain(int /*device*/) { return absl::OkStatus(); }
  /// The ordinal of the device the memory at `ptr` belongs to; NotFoundError for memory the
  /// backend does not know.
  virtual absl::StatusOr<int> PointerDevice(uintptr_t /*ptr*/) {
    return absl::NotFoundError("memory of no device of this backend");
  }
  /// The protocol handle of one of our streams; NotImplementedError where streams have none.
  virtual absl::StatusOr<uintptr_t> ExternalHandle(Stream& /*stream*/) {
    return NotImplementedError("stream: this backend's streams have no external handle");
  }
  /// Work queued later on `waiter` waits for the work queued on the library stream `external`
  /// so far (the host does not block).
  virtual absl::Status WaitForExternal(Stream& /*waiter*/, uintptr_t /*external*/) {
    return NotImplementedError("stream: this backend cannot wait for external streams");
  }
  /// Work queued later on the library stream `external` waits for the work queued on
  /// `producer` so far.
  virtual absl::Status ExternalWaitsFor(uintptr_t /*external*/, Stream& /*producer*/) {
    return NotImplementedError("stream: this backend cannot order external streams");
  }
};

}  // namespace pygpukit::hal
