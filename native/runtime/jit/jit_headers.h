// Headers the JIT hands to NVRTC with every program: the scalar semantics shared with the CPU
// backend and nvcc (core/scalar_types.h, ops/kernels/*.h) and stand-ins for the few standard
// headers they include (runtime/jit/jit_shims/), so one definition of each op serves all three
// compilers. Generated at build time from the source files (cmake/EmbedText.cmake).
#pragma once

#include <cstddef>

#include "absl/types/span.h"

namespace pygpukit {

/// One embedded header: the name it is included by and its text.
struct JitHeader {
  const char* name;
  const char* text;
  size_t size;
};

/// Every embedded header.
absl::Span<const JitHeader> JitEmbeddedHeaders();

}  // namespace pygpukit
