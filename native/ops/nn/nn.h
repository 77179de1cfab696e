// The nn family's ops (gp.nn): row-wise softmax and normalizations. Inputs of a floating dtype
// (float16, bfloat16, float32, float64), float32 accumulation (float64 for float64), results in
// the input's dtype.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/array.h"

namespace pygpukit::ops {

/// softmax (or with `log` log_softmax) of `x` along `axis` (negative allowed); `dtype` casts x
/// first (torch's dtype=). A 0-d x is one row of one element. A row of only -inf gives NaN (as
/// torch). The last axis of a contiguous x is the fast path; another axis runs through a
/// transposed copy.
absl::StatusOr<GPUArray> Softmax(const GPUArray& x, int64_t axis, bool log,
                                 std::optional<DType> dtype = std::nullopt);

/// A normalization's result: y, and with a residual also x + residual (rounded to the dtype),
/// the value that was normalized (the pre-norm transformer's next residual).
struct NormResult {
  GPUArray y;
  std::optional<GPUArray> residual;
};

/// layer_norm over the trailing dims `normalized_shape` of x: (h - mean) / sqrt(var + eps) *
/// weight + bias with h = x (+ residual), the biased variance, weight and bias of shape
/// normalized_shape and x's dtype (either may be absent), residual of x's shape and dtype.
absl::StatusOr<NormResult> LayerNorm(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                     const GPUArray* weight, const GPUArray* bias, double eps,
                                     const GPUArray* residual = nullptr);

/// rms_norm over the trailing dims `normalized_shape` of x: h / sqrt(mean(h^2) + eps) * weight
/// with h = x (+ residual); eps absent: the dtype's machine epsilon (as torch).
absl::StatusOr<NormResult> RmsNorm(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                   const GPUArray* weight, std::optional<double> eps,
                                   const GPUArray* residual = nullptr);

}  // namespace pygpukit::ops
