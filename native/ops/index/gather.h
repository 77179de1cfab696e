// The per-element bodies of the gather kernels (take, take_along_axis, integer-array indexing)
// and of the scatter ones (assignment through index arrays),
// shared by the CPU loop (g++) and the CUDA kernels (nvcc).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/scalar_types.h"
#include "ops/kernels/params.h"

namespace pygpukit::kernels {

/// Most integer index arrays one gather combines (NumPy advanced indexing with that many).
inline constexpr int kGatherMaxIndices = 4;

/// out[i] = src[sum_d c_d * src_strides[d] + sum_k idx_k[c] * idx[k].src_stride] for the
/// coordinates c of linear index i over `shape` (the output's, coalesced; the output is dense).
/// Index values are int64, bounds-checked by the op layer; negative ones count from `extent`.
/// Byte strides for src (the kernel copies `itemsize` bytes, whatever the dtype); element
/// strides for the index arrays (0 where an index array is broadcast).
struct GatherParams {
  int64_t n;
  int32_t ndim;
  int32_t nidx;
  int64_t shape[kKernelMaxDims];
  int64_t src_strides[kKernelMaxDims];
  const void* src;
  void* out;
  struct Index {
    const int64_t* ptr;
    int64_t strides[kKernelMaxDims];
    int64_t src_stride;  // bytes per unit of this index
    int64_t extent;      // of the indexed source axis
  } idx[kGatherMaxIndices];
};

static_assert(sizeof(GatherParams) == 16 + 128 + 16 + kGatherMaxIndices * 88,
              "GatherParams layout changed");

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
