// Device-side helpers of the generated elementwise kernels (ops/elementwise/elementwise_codegen.h):
// NVRTC receives this header with every elementwise program. The kernels themselves are generated
// text; these types keep that text short.
#pragma once

#include "ops/kernels/math_ops.h"

namespace pygpukit::kernels {

/// V elements of T moved as one access (V * sizeof(T) <= 16 bytes, aligned to its size).
template <int V, typename T>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

/// A shape or a stride vector of a strided launch, passed by value (the host passes int64
/// arrays of the same layout).
template <int N>
struct Dims {
  long long v[N];
};

}  // namespace pygpukit::kernels
