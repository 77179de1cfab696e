// Row-wise ops of the nn family (softmax, log_softmax, layer_norm, rms_norm): the parameter
// block and the per-element formulas, shared by the CPU loops and the CUDA kernels (g++ and nvcc
// compile the same code), so the two backends differ only in the order of their sums.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>

#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// Which row op a RowsParams block runs.
/// kRowSafeSoftmax: softmax whose rows of only -inf give 0 instead of NaN (attention's fully
/// masked query rows, as torch's SDPA).
enum RowOp : int32_t {
  kRowSoftmax = 0,
  kRowLogSoftmax = 1,
  kRowLayerNorm = 2,
  kRowRmsNorm = 3,
  kRowSafeSoftmax = 4,
};

/// `rows` contiguous rows of `cols` elements (row stride `cols`) of one floating dtype.
/// Norms may add `residual` (same layout) to x first: the sum, rounded to the dtype, is written
/// to `residual_out` and is what gets normalized (what `h = x + r; norm(h)` computes unfused).
struct RowsParams {
  int64_t rows, cols;
  const void* x;
  void* y;
  const void* residual;  // nullptr: none
  void* residual_out;    // with residual
  const void* weight;    // norms: per-column scale, nullptr: 1
  const void* bias;      // layer_norm: per-column shift, nullptr: 0
  double eps;            // norms (float64 norms use it unrounded)
  int32_t op;            // RowOp
  int32_t pad;
};

static_assert(sizeof(RowsParams) == 80, "RowsParams layout changed");

/// The CUDA row kernel's launch geometry (cuda/nn_rows.cu and its launcher): each thread holds
/// up to kRowCache 16-byte vectors of its row in registers, with at most RowMaxThreads(element
/// size) threads a row (the kernel's launch bound). Four vectors and 1024 threads keep the
/// 16-bit and float32 kernels at 64 registers, 32 resident warps a SM (eight vectors held 115
/// registers and 16 warps: too few bytes in flight for rows of 1024 columns); float64 stays at
/// 512 threads, where its kernels do not spill.
constexpr int kRowCache = 4;
constexpr int RowMaxThreads(int element_size) { return element_size == 8 ? 512 : 1024; }

/// The accumulation type of a row op over T: double for float64, else float.
template <typename T>
using RowAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// exp(x); kFast (rows of a 16-bit dtype, whose outputs keep 8-11 bits) takes the GPU's
/// two-instruction exp2 of x * log2(e) instead of the correctly rounded expf.
template <typename A, bool kFast = false>
PGK_HD A RowExp(A x) {
  if constexpr (std::is_same_v<A, float>) {
#if defined(__CUDA_ARCH__)
    if constexpr (kFast) {
      float r;
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
      return r;
    }
#endif
    return expf(x);
  } else {
    return exp(x);
  }
}

/// The first pass: softmax takes the row's maximum (max-reduced), layer_norm its sum (the mean
/// follows); rms_norm has no first pass.
constexpr PGK_HD bool RowFirstIsMax(int32_t op) {
  return op == kRowSoftmax || op == kRowLogSoftmax || op == kRowSafeSoftmax;
}

/// The statistic a from the first pass's result (layer_norm: sum -> mean).
template <typename A>
PGK_HD A RowCenter(int32_t op, A first, int64_t cols) {
  if (op == kRowLayerNorm) return first / static_cast<A>(cols);
  return op == kRowRmsNorm ? A(0) : first;
}

/// The second pass's term of v given a: exp(v - a) for softmax, (v - a)^2 for layer_norm, v^2
/// for rms_norm (a = 0).
template <typename A, bool kFastExp = false>
PGK_HD A RowTerm(int32_t op, A v, A a) {
  if (RowFirstIsMax(op)) return RowExp<A, kFastExp>(v - a);
  const A d = v - a;
  return d * d;
}

/// One output element from its input v and the row's two statistics: softmax (a = max, b = 1 /
/// sum of exp(v - a)), log_softmax (a = max, b = log of that sum), layer_norm (a = mean, b = 1 /
/// sqrt(var + eps)), rms_norm (b = 1 / sqrt(mean of squares + eps)); w and c are the column's
/// weight and bias (1 and 0 when absent).
template <typename A, bool kFastExp = false>
PGK_HD A RowOut(int32_t op, A v, A a, A b, A w, A c) {
  switch (op) {
    case kRowSoftmax:
      return RowExp<A, kFastExp>(v - a) * b;
    case kRowSafeSoftmax:
      return a == -static_cast<A>(INFINITY) ? A(0) : RowExp<A, kFastExp>(v - a) * b;
    case kRowLogSoftmax:
      return v - a - b;
    case kRowLayerNorm:
      return (v - a) * b * w + c;
    default:
      return v * b * w;
  }
}

/// The row statistic b from the second pass's sum (softmax: sum of exp(v - max); layer_norm:
/// sum of squared deviations; rms_norm: sum of squares) over `cols` elements.
template <typename A>
PGK_HD A RowScale(int32_t op, A sum, int64_t cols, double eps) {
  switch (op) {
    case kRowSoftmax:
    case kRowSafeSoftmax:
      return A(1) / sum;
    case kRowLogSoftmax:
      if constexpr (std::is_same_v<A, float>) {
        return logf(sum);
      } else {
        return log(sum);
      }
    default:
      if constexpr (std::is_same_v<A, float>) {
        return 1.0f / sqrtf(sum / static_cast<float>(cols) + static_cast<float>(eps));
      } else {
        return 1.0 / sqrt(sum / static_cast<double>(cols) + eps);
      }
  }
}

}  // namespace pygpukit::kernels
