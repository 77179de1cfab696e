// Per-element bodies of the elementwise kernel families, shared by the CPU loops and the CUDA
// kernels: each computes output element `i` of a launch described by ElementwiseParams.
#pragma once

#include "ops/kernels/params.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// out[i] = Cast<Dst>(a[i]) over strided layouts.
template <typename Src, typename Dst>
PGK_HD void CopyElement(const ElementwiseParams& p, int64_t i) {
  const Src* src = static_cast<const Src*>(p.a);
  Dst* dst = static_cast<Dst*>(p.out);
  if (p.contiguous) {
    dst[i] = Cast<Dst>(src[i]);
  } else {
    dst[OffsetOf(i, p.ndim, p.shape, p.out_strides)] =
        Cast<Dst>(src[OffsetOf(i, p.ndim, p.shape, p.a_strides)]);
  }
}

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

/// out[i] = start + i * step, computed in int64 for integers and double for floats.
template <typename T>
PGK_HD void ArangeElement(const ArangeParams& p, int64_t i) {
  T* out = static_cast<T*>(p.out);
  if constexpr (std::is_integral_v<T>) {
    // In uint64: wraps (as NumPy's int64 arange) instead of signed-overflow UB.
    out[i] = static_cast<T>(
        static_cast<int64_t>(static_cast<uint64_t>(p.start_i) +
                             static_cast<uint64_t>(i) * static_cast<uint64_t>(p.step_i)));
  } else {
    out[i] = Cast<T>(p.start_f + static_cast<double>(i) * p.step_f);
  }
}

}  // namespace pygpukit::kernels
