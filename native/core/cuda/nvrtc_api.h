// NVRTC loaded at run time. The JIT engine builds on this table; here it reports availability.
#pragma once

#include <nvrtc.h>

#include "absl/status/statusor.h"

namespace pygpukit::cuda {

#define PGK_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)              \
  X(nvrtcGetErrorString)       \
  X(nvrtcCreateProgram)        \
  X(nvrtcDestroyProgram)       \
  X(nvrtcCompileProgram)       \
  X(nvrtcGetProgramLogSize)    \
  X(nvrtcGetProgramLog)        \
  X(nvrtcGetCUBINSize)         \
  X(nvrtcGetCUBIN)

/// Resolved NVRTC entry points.
struct NvrtcApi {
#define PGK_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  PGK_NVRTC_FUNCTIONS(PGK_NVRTC_MEMBER)
#undef PGK_NVRTC_MEMBER
  int major = 0, minor = 0;
};

/// Loads libnvrtc (once per process).
absl::StatusOr<const NvrtcApi*> LoadNvrtc();

}  // namespace pygpukit::cuda
