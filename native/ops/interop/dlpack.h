// Zero-copy exchange of arrays with other libraries: DLPack managed tensors (both the 1.x
// versioned form and the legacy one), views of foreign memory (the CUDA array interface), and
// the stream handshakes these protocols ask for.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/array.h"

// The DLPack 1.0 additions, declared here while the system's header (Debian's libdlpack-dev 0.6)
// predates them; their layout is the one the DLPack standard fixes. A 1.x header supplies them.
#ifndef DLPACK_MAJOR_VERSION
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
extern "C" {
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
}
#endif

namespace pygpukit::ops {

/// DLPack's type code for bool (kDLBool, added in DLPack 0.8).
inline constexpr uint8_t kDLPackBoolCode = 6;
/// DLPack 1.1 type codes of the 8-bit floats (kDLFloat8_e4m3fn, kDLFloat8_e5m2), also missing
/// from the system header.
inline constexpr uint8_t kDLPackFloat8E4M3FnCode = 10;
inline constexpr uint8_t kDLPackFloat8E5M2Code = 12;

/// The DLPack (device_type, device_id) of a device: (kDLCPU, 0) or (kDLCUDA, index).
std::pair<int, int> DLPackDevice(Device device);
/// The device a DLPack device names: kDLCPU and kDLCUDAHost memory is the cpu device's,
/// kDLCUDA and kDLCUDAManaged memory cuda:id's; others are NotImplementedError.
absl::StatusOr<Device> DeviceFromDLPack(int device_type, int device_id);

/// `a` as a DLPack 1.x managed tensor sharing its memory (kept alive until the deleter runs).
/// The caller owns the result and must call its deleter.
absl::StatusOr<DLManagedTensorVersioned*> ToDLPack(const GPUArray& a);
/// The legacy (pre-1.0) form of ToDLPack.
absl::StatusOr<DLManagedTensor*> ToDLPackLegacy(const GPUArray& a);

/// A view of a DLPack tensor's memory, without a copy. On success the array owns `t`: its
/// deleter runs once the last view is gone and the work queued on the memory has completed.
/// On error `t` is untouched (the caller still owns it). Read-only tensors are refused
/// (ValueError: arrays here are writable) unless `read_only_ok`, for a caller that only copies
/// from the view.
absl::StatusOr<GPUArray> FromDLPack(DLManagedTensorVersioned* t, bool read_only_ok = false);
/// Whether a DLPack 1.x tensor is flagged read-only.
inline bool IsReadOnly(const DLManagedTensorVersioned& t) {
  return (t.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
}
/// The legacy (pre-1.0) form of FromDLPack.
absl::StatusOr<GPUArray> FromDLPackLegacy(DLManagedTensor* t);

/// A view of `data` (foreign memory holding `shape` elements of `dtype` with element
/// `strides`, C order when nullopt) on `device`. `release` runs once the last view is gone and
/// the work queued on it has completed, on a runtime thread (it may wait for locks such as the
/// Python GIL).
absl::StatusOr<GPUArray> FromForeignMemory(void* data, DType dtype, absl::Span<const int64_t> shape,
                                           std::optional<absl::Span<const int64_t>> strides,
                                           Device device, std::function<void()> release);

/// The CUDA device the memory at `ptr` belongs to; ValueError for memory CUDA does not know.
absl::StatusOr<Device> CudaDeviceOf(uintptr_t ptr);
/// The integer handle (a CUstream) of the stream work on the CUDA device `device` is queued on.
absl::StatusOr<uintptr_t> StreamHandle(Device device);
/// Later work on `device`'s current stream waits for what another library queued on its stream
/// `external` (a handle; 1 and 2 are the legacy and per-thread default streams).
absl::Status WaitForExternalStream(Device device, uintptr_t external);
/// Later work on another library's stream `external` waits for the work queued on `device`'s
/// current stream so far.
absl::Status ExternalStreamWaits(Device device, uintptr_t external);

}  // namespace pygpukit::ops
