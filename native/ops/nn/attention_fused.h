// The fused attention kernels from the op layer (attention.cc, paged.cc): inputs checked for
// what the kernels take, parameters filled, the kernel slot called.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "ops/array.h"

namespace pygpukit::ops {

/// A paged cache's lookup for FusedAttention: the block table (B, blocks) and the sequences'
/// lengths (B,), both int64 and contiguous; k and v are then the caches (blocks, Hk, block size,
/// D).
struct PagedKv {
  GPUArray table;
  GPUArray lens;
};

/// The fused kernels' attention of q (..., Hq, Sq, E) (at most one batch dim) over k, v, or
/// nullopt where none serves the problem (the CPU backend, other dtypes or head dims, layouts,
/// old GPUs). `mask`: as ScaledDotProductAttention's (not with `paged`).
absl::StatusOr<std::optional<GPUArray>> FusedAttention(const GPUArray& q, const GPUArray& k,
                                                       const GPUArray& v, const GPUArray* mask,
                                                       bool causal, double scale,
                                                       const PagedKv* paged = nullptr);

}  // namespace pygpukit::ops
