// Per-element bodies of the creation family's kernels (copy with conversion, fill, arange),
// shared by the CPU loops and the CUDA kernels (g++ and nvcc): each computes output element `i`.
#pragma once

#include <cstring>
#include <type_traits>

#include "ops/kernels/params.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// out[i] = start + i * step over a contiguous output.
struct ArangeParams {
  int64_t n;
  void* out;
  double start_f, step_f;   // used for floating outputs
  int64_t start_i, step_i;  // used for integer outputs
};

static_assert(sizeof(ArangeParams) == 48, "ArangeParams layout changed");

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

/// out[i] = the itemsize-byte word in p.scalar (a fill: the value already in out's dtype).
template <typename Word>
PGK_HD void FillElement(const ElementwiseParams& p, int64_t i) {
  Word v;
  std::memcpy(&v, p.scalar, sizeof(Word));
  Word* out = static_cast<Word*>(p.out);
  if (p.contiguous) {
    out[i] = v;
  } else {
    out[OffsetOf(i, p.ndim, p.shape, p.out_strides)] = v;
  }
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
