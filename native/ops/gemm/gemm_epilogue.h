// The GEMM epilogue, defined once for every backend: the CPU loop (g++) and each CUDA GEMM
// family (nvcc) call these same functions on the accumulator, so fused results agree.
#pragma once

#include <cmath>

#include "core/scalar_types.h"
#include "ops/gemm/gemm_params.h"

namespace pygpukit::kernels {

/// act(x) for GemmActivation `act`. GELU is the exact erf form (torch's default), GELU-tanh its
/// tanh approximation, SiLU is x * sigmoid(x).
template <typename Acc>
PGK_HD Acc GemmActivate(Acc x, int32_t act) {
  switch (act) {
    case kActRelu:
      return x < Acc(0) ? Acc(0) : x;  // NaN fails the comparison and propagates
    case kActGelu:
      return Acc(0.5) * x * (Acc(1) + erf(x * Acc(0.70710678118654752440)));
    case kActSilu:
      return x / (Acc(1) + exp(-x));
    case kActGeluTanh:  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
      return Acc(0.5) * x *
             (Acc(1) + tanh(Acc(0.79788456080286535588) * (x + Acc(0.044715) * x * x * x)));
    default:
      return x;
  }
}

/// Value of output element (batch, row, col) from its accumulator: act(alpha * acc + beta * C +
/// bias). `Out` is the output storage type; C and bias are read in it.
template <typename Acc, typename Out>
PGK_HD Acc GemmEpilogueValue(const GemmParams& p, Acc acc, int64_t batch, int64_t row,
                             int64_t col) {
  Acc v = Acc(p.alpha) * acc;
  if (p.beta != 0.0) {
    const Out* c = static_cast<const Out*>(p.c);
    v += Acc(p.beta) * static_cast<Acc>(c[batch * p.c_batch + row * p.c_row + col * p.c_col]);
  }
  if (p.bias != nullptr) {
    v += static_cast<Acc>(static_cast<const Out*>(p.bias)[batch * p.bias_batch + col]);
  }
  return GemmActivate(v, p.activation);
}

}  // namespace pygpukit::kernels
