// User kernels from CUDA C++ source (gp.RawKernel): JIT-compiled (runtime/jit/jit.h) for the device
// they run on and launched on the thread's current stream through the dispatcher.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/device.h"
#include "ops/array.h"
#include "runtime/jit/jit_cache.h"

namespace pygpukit::ops {

/// One kernel argument: an array (passed as the address of its first element) or the bytes of
/// a scalar (passed by value, as the kernel's parameter type expects).
struct KernelArg {
  const GPUArray* array = nullptr;
  std::array<unsigned char, 16> bytes{};
  int size = 0;  // scalar bytes, 1..16
};

/// Launch geometry: grid and block extents (x, y, z) and dynamic shared memory in bytes.
struct KernelDims {
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t shared_bytes = 0;
};

/// Launches kernel `kernel` (an extern "C" __global__ function) of `src`, compiled for the
/// device of the array arguments (they must share one CUDA device; `device` when there are
/// none, else the default device), on that device's current stream. Errors: ValueError for bad
/// dims or arguments on several devices, NotImplementedError on a CPU device or without NVRTC,
/// RuntimeError for compile errors (with NVRTC's log) and launch failures.
absl::Status LaunchRawKernel(const JitSource& src, absl::string_view kernel, const KernelDims& dims,
                             absl::Span<const KernelArg> args,
                             std::optional<Device> device = std::nullopt);

/// The cubin of `src` for `arch` ("sm_90"; default: the arch of the default device when it is a
/// GPU, else of the first GPU), compiled or taken from the JIT cache. Needs NVRTC but no GPU.
absl::StatusOr<std::string> CompileRawKernel(const JitSource& src,
                                             std::optional<std::string> arch = std::nullopt);

}  // namespace pygpukit::ops
