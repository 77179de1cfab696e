// Host-compiler JIT for the CPU backend's user kernels (gp.ElementwiseKernel on the CPU): C++
// source is compiled by the system compiler into a shared object, cached on disk next to the
// NVRTC cache and loaded with dlopen.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit {

/// The address of `symbol` (extern "C") in `source` compiled with $CXX (else c++) as C++17, -O2,
/// with the JIT's embedded headers on the include path. Compiled once per source and compiler:
/// the shared object is cached in memory and under the cache directory (PYGPUKIT_CACHE_DIR).
/// NotImplementedError when no compiler runs; a compile error is a RuntimeError carrying the
/// compiler's output. Thread-safe.
absl::StatusOr<void*> HostJitSymbol(const std::string& source, absl::string_view symbol);

}  // namespace pygpukit
