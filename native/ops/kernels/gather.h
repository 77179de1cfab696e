// The per-element bodies of the gather kernels (take, take_along_axis, integer-array indexing)
// and of the scatter ones (assignment through index arrays),
// shared by the CPU loop (g++) and the CUDA kernels (nvcc).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/scalar_types.h"
#include "ops/kernels/params.h"

namespace pygpukit::kernels {

/// Byte offset into src of output element i (see GatherParams).
PGK_HD int64_t GatherOffset(const GatherParams& p, int64_t i) {
  int64_t src = 0;
  int64_t at[kGatherMaxIndices] = {0, 0, 0, 0};
  for (int d = p.ndim - 1; d >= 0; --d) {
    const int64_t c = i % p.shape[d];
    i /= p.shape[d];
    src += c * p.src_strides[d];
    for (int k = 0; k < p.nidx; ++k) at[k] += c * p.idx[k].strides[d];
  }
  for (int k = 0; k < p.nidx; ++k) {
    int64_t v = p.idx[k].ptr[at[k]];
    if (v < 0) v += p.idx[k].extent;
    src += v * p.idx[k].src_stride;
  }
  return src;
}

/// Copies one element of `Word` (the element's size) for output index i.
template <typename Word>
PGK_HD void GatherElement(const GatherParams& p, int64_t i) {
  const char* src = static_cast<const char*>(p.src) + GatherOffset(p, i);
  static_cast<Word*>(p.out)[i] = *reinterpret_cast<const Word*>(src);
}

/// The other direction: output element i (here the dense source) goes to its place in src.
template <typename Word>
PGK_HD void ScatterElement(const GatherParams& p, int64_t i) {
  char* dst = const_cast<char*>(static_cast<const char*>(p.src)) + GatherOffset(p, i);
  *reinterpret_cast<Word*>(dst) = static_cast<const Word*>(p.out)[i];
}

}  // namespace pygpukit::kernels
