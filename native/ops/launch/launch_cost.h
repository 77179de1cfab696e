// What launches declare to the profiler (runtime/trace/tracer.h): FLOPs and bytes moved, which
// profiles turn into achieved TFLOP/s and GB/s.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "core/dtype.h"
#include "ops/array.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::ops {

/// The distinct bytes of `a` (a broadcast dimension counts once), read or written once.
int64_t DistinctBytes(const GPUArray& a);
/// An elementwise launch: its array operands' bytes, one operation per output element.
LaunchCost ElementwiseCost(absl::Span<const GPUArray* const> arrays, int64_t n);
/// A reduction or scan of `n_in` elements into `n_out`: one operation per input element.
LaunchCost ReduceCost(int64_t n_in, DType in, int64_t n_out, DType out);

}  // namespace pygpukit::ops
