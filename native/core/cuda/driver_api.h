// The CUDA driver API as a typed function table filled at run time: libcuda.so.1 is dlopen'd and
// every entry point is resolved through cuGetProcAddress, so nothing links libcuda or libcudart.
// Only core/cuda/ and runtime code that needs driver types includes this header.
#pragma once

#include <cuda.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit::cuda {

#define PGK_DRIVER_FUNCTIONS(X)                  \
  X(cuInit)                                      \
  X(cuDriverGetVersion)                          \
  X(cuGetErrorName)                              \
  X(cuGetErrorString)                            \
  X(cuDeviceGetCount)                            \
  X(cuDeviceGet)                                 \
  X(cuDeviceGetName)                             \
  X(cuDeviceGetAttribute)                        \
  X(cuDeviceTotalMem)                            \
  X(cuDevicePrimaryCtxRetain)                    \
  X(cuDevicePrimaryCtxRelease)                   \
  X(cuCtxSetCurrent)                             \
  X(cuCtxGetCurrent)                             \
  X(cuCtxGetStreamPriorityRange)                 \
  X(cuMemAlloc)                                  \
  X(cuMemFree)                                   \
  X(cuMemHostAlloc)                              \
  X(cuMemFreeHost)                               \
  X(cuMemGetInfo)                                \
  X(cuPointerGetAttribute)                       \
  X(cuMemcpyAsync)                               \
  X(cuMemcpyHtoDAsync)                           \
  X(cuMemcpyDtoHAsync)                           \
  X(cuMemcpyDtoDAsync)                           \
  X(cuMemsetD8Async)                             \
  X(cuStreamCreateWithPriority)                  \
  X(cuStreamDestroy)                             \
  X(cuStreamSynchronize)                         \
  X(cuStreamWaitEvent)                           \
  X(cuEventCreate)                               \
  X(cuEventDestroy)                              \
  X(cuEventRecord)                               \
  X(cuEventQuery)                                \
  X(cuEventSynchronize)                          \
  X(cuEventElapsedTime)                          \
  X(cuLibraryLoadData)                           \
  X(cuLibraryUnload)                             \
  X(cuLibraryGetKernel)                          \
  X(cuKernelGetFunction)                         \
  X(cuFuncSetAttribute)                          \
  X(cuLaunchKernelEx)                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuTensorMapEncodeTiled)

// Entry points of features the runtime can do without: nullptr where the driver lacks them, and
// the feature reports that it is unavailable. Green contexts (SM partitions) and kernels'
// parameter layouts (which the launch queue needs) came in CUDA 12.4; stream memory operations
// (preemption's device word) need a driver that enables them.
#define PGK_DRIVER_OPTIONAL_FUNCTIONS(X) \
  X(cuDeviceGetDevResource)              \
  X(cuDevSmResourceSplitByCount)         \
  X(cuDevResourceGenerateDesc)           \
  X(cuGreenCtxCreate)                    \
  X(cuGreenCtxStreamCreate)              \
  X(cuFuncGetParamInfo)                  \
  X(cuStreamWriteValue32)

/// Resolved driver entry points. Types come from cuda.h via decltype, so a signature mismatch is a
/// compile error rather than a crash.
struct DriverApi {
#define PGK_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  PGK_DRIVER_FUNCTIONS(PGK_DRIVER_MEMBER)
  PGK_DRIVER_OPTIONAL_FUNCTIONS(PGK_DRIVER_MEMBER)
#undef PGK_DRIVER_MEMBER
};

/// Loads libcuda.so.1 and resolves the table (once per process). Fails with a message that says
/// what is missing when there is no driver.
absl::StatusOr<const DriverApi*> LoadDriverApi();

/// Converts a driver result to a status naming `what`; CUDA_ERROR_OUT_OF_MEMORY maps to
/// MemoryError.
absl::Status DriverStatus(CUresult r, absl::string_view what);

}  // namespace pygpukit::cuda

/// Evaluates a driver call and returns a status from the enclosing function on failure.
#define PGK_CU_RETURN_IF_ERROR(call, what) \
  PGK_RETURN_IF_ERROR(::pygpukit::cuda::DriverStatus((call), (what)))
