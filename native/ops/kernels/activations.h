// Activation functions, defined once for every backend and every caller: the GEMM epilogue
// (GemmActivate: the CPU loop and the CUDA families), the elementwise functions gp.nn.gelu /
// silu and the gated products (ops/kernels/math_ops.h: the CPU loops and the NVRTC-generated
// kernels). A (float or double) is the type the caller computes in.
#pragma once

#include <cmath>

#include "core/scalar_types.h"

namespace pygpukit::kernels {

/// ReLU: max(x, 0); NaN fails the comparison and propagates.
template <typename A>
PGK_HD A Relu(A x) {
  return x < A(0) ? A(0) : x;
}

/// GELU, the exact erf form (torch's default): x / 2 * (1 + erf(x / sqrt(2))).
template <typename A>
PGK_HD A Gelu(A x) {
  return A(0.5) * x * (A(1) + erf(x * A(0.70710678118654752440)));
}

/// GELU's tanh approximation: x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).
template <typename A>
PGK_HD A GeluTanh(A x) {
  return A(0.5) * x * (A(1) + tanh(A(0.79788456080286535588) * (x + A(0.044715) * x * x * x)));
}

/// SiLU (swish): x * sigmoid(x) = x / (1 + exp(-x)).
template <typename A>
PGK_HD A Silu(A x) {
  return x / (A(1) + exp(-x));
}

}  // namespace pygpukit::kernels
