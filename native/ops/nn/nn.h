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

/// softmax over the last axis in which a row of only -inf gives zeros (no key to attend to; as
/// torch's scaled_dot_product_attention), not NaN.
absl::StatusOr<GPUArray> SoftmaxMasked(const GPUArray& x);

/// scaled_dot_product_attention with torch's semantics and layout: q (..., Hq, Sq, E), k (...,
/// Hk, Sk, E), v (..., Hk, Sk, Ev) of one floating dtype (or 2-D: one head) -> (..., Hq, Sq, Ev);
/// softmax(scale * q @ k^T + mask) @ v with scale 1 / sqrt(E) by default. `mask`: bool (True
/// takes part) or floating (added), broadcast to (..., Hq, Sq, Sk). `is_causal`: query i sees
/// keys j <= i + Sk - Sq (aligned at the bottom right, as FlashAttention-2; torch aligns at the
/// top left when Sq != Sk). `enable_gqa`: Hq a multiple of Hk, query head h reading kv head
/// h / (Hq / Hk). A query row with no key left gives zeros (as torch). Scores in float32
/// (float64 for float64), the probabilities rounded to the inputs' dtype for the product with v.
absl::StatusOr<GPUArray> ScaledDotProductAttention(const GPUArray& q, const GPUArray& k,
                                                   const GPUArray& v, const GPUArray* mask,
                                                   bool is_causal, std::optional<double> scale,
                                                   bool enable_gqa);

/// Paged KV cache: k_cache / v_cache (blocks, Hk, block size, D) shared by the sequences, whose
/// i-th block is block_table[b, i]. Writes k and v (B, Hk, T, D) at positions start[b] ..
/// start[b] + T - 1 of each sequence (IndexError for a position past its table or a block past
/// the cache).
absl::Status PagedKvAppend(const GPUArray& k_cache, const GPUArray& v_cache, const GPUArray& k,
                           const GPUArray& v, const GPUArray& block_table, const GPUArray& start);

/// Attention of q (B, Hq, Sq, D) over each sequence's first seq_lens[b] cached keys and values
/// (Hq a multiple of Hk); with `is_causal` q's rows are the sequence's last Sq positions (row i
/// sees keys j <= seq_lens[b] - Sq + i). Table entries past a sequence's length are not read;
/// `check_table` checks the others are blocks of the cache (IndexError; one read back), else a
/// bad id reads the nearest block (never past the cache).
absl::StatusOr<GPUArray> PagedAttention(const GPUArray& q, const GPUArray& k_cache,
                                        const GPUArray& v_cache, const GPUArray& block_table,
                                        const GPUArray& seq_lens, std::optional<double> scale,
                                        bool is_causal, bool check_table = true);

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
/// with h = x (+ residual); eps absent: float32's machine epsilon (float64's for float64), as
/// torch.
absl::StatusOr<NormResult> RmsNorm(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                   const GPUArray* weight, std::optional<double> eps,
                                   const GPUArray* residual = nullptr);

/// Rotary position embedding of x (..., D): the first R columns, R = 2 * cos.shape[1] <= D,
/// rotated pairwise by the angles of each row's position (cos and sin: (P, R / 2) tables, any
/// floating dtype, read in the compute type), the other columns copied. `positions` (integers)
/// broadcast against x.shape[:-1], each in [0, P) (IndexError otherwise: a min / max and one
/// read back); absent: `start` plus the index along axis -2 (the sequence axis of (B, H, S, D)),
/// checked on the host without reading the device. `interleaved`: GPT-J pairs (2j, 2j + 1),
/// else GPT-NeoX halves (j, j + R / 2). Into `out` (x's shape and dtype, contiguous; may be x
/// itself) or a new array.
absl::StatusOr<GPUArray> ApplyRotary(const GPUArray& x, const GPUArray& cos, const GPUArray& sin,
                                     const GPUArray* positions, bool interleaved,
                                     const GPUArray* out = nullptr, int64_t start = 0);

}  // namespace pygpukit::ops
