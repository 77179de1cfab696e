// Per-element bodies of the elementwise kernel families, shared by the CPU loops and the CUDA
// kernels: each computes output element `i` of a launch described by ElementwiseParams.
#pragma once

#include "ops/kernels/params.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// out[i] = Op(a[i]) over strided layouts.
template <typename Op, typename T>
PGK_HD void UnaryElement(const ElementwiseParams& p, int64_t i) {
  const T* a = static_cast<const T*>(p.a);
  T* out = static_cast<T*>(p.out);
  if (p.contiguous) {
    out[i] = Op::Apply(a[i]);
  } else {
    out[OffsetOf(i, p.ndim, p.shape, p.out_strides)] =
        Op::Apply(a[OffsetOf(i, p.ndim, p.shape, p.a_strides)]);
  }
}

/// out[i] = Op(a[i], b[i]) with either operand possibly a by-value scalar.
template <typename Op, typename T>
PGK_HD void BinaryElement(const ElementwiseParams& p, int64_t i) {
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  const T scalar = *reinterpret_cast<const T*>(p.scalar);
  if (p.contiguous) {
    T x = p.scalar_operand == kScalarA ? scalar : a[i];
    T y = p.scalar_operand == kScalarB ? scalar : b[i];
    out[i] = Op::Apply(x, y);
    return;
  }
  T x = p.scalar_operand == kScalarA ? scalar : a[OffsetOf(i, p.ndim, p.shape, p.a_strides)];
  T y = p.scalar_operand == kScalarB ? scalar : b[OffsetOf(i, p.ndim, p.shape, p.b_strides)];
  out[OffsetOf(i, p.ndim, p.shape, p.out_strides)] = Op::Apply(x, y);
}

}  // namespace pygpukit::kernels
