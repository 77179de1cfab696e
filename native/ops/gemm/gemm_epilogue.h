// The GEMM epilogue, defined once for every backend: the CPU loop (g++) and each CUDA GEMM
// family (nvcc) call these same functions on the accumulator, so fused results agree.
#pragma once

#include <cmath>

#include "core/scalar_types.h"
#include "ops/gemm/gemm_params.h"
#include "ops/kernels/activations.h"

namespace pygpukit::kernels {

/// Elements (or groups of four) each thread of the unfused epilogue pass (gemm_epilogue.cu)
/// loads before it computes any; the launcher sizes the pass's column chunks by it.
inline constexpr int kEpiloguePassIlp = 4;

/// act(x) for GemmActivation `act`. GELU is the exact erf form (torch's default), GELU-tanh its
/// tanh approximation, SiLU is x * sigmoid(x).
template <typename Acc>
PGK_HD Acc GemmActivate(Acc x, int32_t act) {
  switch (act) {
    case kActRelu:
      return Relu(x);
    case kActGelu:
      return Gelu(x);
    case kActSilu:
      return Silu(x);
    case kActGeluTanh:
      return GeluTanh(x);
    default:
      return x;
  }
}

/// C of output element (batch, row, col), in `Out` (read only when beta != 0).
template <typename Out>
PGK_HD Out GemmAddend(const GemmParams& p, int64_t batch, int64_t row, int64_t col) {
  return static_cast<const Out*>(p.c)[batch * p.c_batch + row * p.c_row + col * p.c_col];
}

/// The bias of output column `col` of batch `batch`, in `Out` (read only when there is one).
template <typename Out>
PGK_HD Out GemmBias(const GemmParams& p, int64_t batch, int64_t col) {
  return static_cast<const Out*>(p.bias)[batch * p.bias_batch + col];
}

/// alpha * acc + beta * c + bias, the epilogue before its activation, from C's and the bias's
/// values already read (ignored when beta is 0 / there is no bias).
template <typename Acc>
PGK_HD Acc GemmEpilogueAffine(const GemmParams& p, Acc acc, Acc c, Acc bias) {
  Acc v = Acc(p.alpha) * acc;
  if (p.beta != 0.0) v += Acc(p.beta) * c;
  if (p.bias != nullptr) v += bias;
  return v;
}

/// act(alpha * acc + beta * c + bias) from C's and the bias's values already read: kernels that
/// read them ahead of their stores use this.
template <typename Acc>
PGK_HD Acc GemmEpilogueCombine(const GemmParams& p, Acc acc, Acc c, Acc bias) {
  return GemmActivate(GemmEpilogueAffine(p, acc, c, bias), p.activation);
}

/// Value of output element (batch, row, col) from its accumulator: act(alpha * acc + beta * C +
/// bias). `Out` is the output storage type; C and bias are read in it.
template <typename Acc, typename Out>
PGK_HD Acc GemmEpilogueValue(const GemmParams& p, Acc acc, int64_t batch, int64_t row,
                             int64_t col) {
  const Acc c = p.beta != 0.0 ? static_cast<Acc>(GemmAddend<Out>(p, batch, row, col)) : Acc(0);
  const Acc bias = p.bias != nullptr ? static_cast<Acc>(GemmBias<Out>(p, batch, col)) : Acc(0);
  return GemmEpilogueCombine(p, acc, c, bias);
}

}  // namespace pygpukit::kernels
