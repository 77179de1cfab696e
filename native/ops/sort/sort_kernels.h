// The sort family's launches (radix sort, merge sort, searchsorted, nonzero's stream
// compaction, which shares the radix sort's scan) and their kernel entry points
// (ops/launch/kernel_slot.h), implemented in cpu/ and cuda/.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/array.h"
#include "ops/launch/kernel_slot.h"
#include "ops/sort/radix.h"
#include "ops/sort/search.h"

namespace pygpukit::ops {

// ---- launches (sort_launch.cc) ----
/// dst (dense int64, values' shape) = insertion points of `values` in the 1-D `sorted` (same
/// dtype), in the order `sorter` (1-D int64, checked) gives when valid.
absl::Status LaunchSearchSorted(const GPUArray& sorted, const GPUArray& sorter,
                                const GPUArray& values, bool right, const GPUArray& dst);
/// One merge-sort pass over the contiguous rows of n keys (`keys_in` -> `keys_out`, same shape
/// and dtype), merging runs of `width`; int64 indices move along when `idx_in` is valid.
absl::Status LaunchMerge(const GPUArray& keys_in, const GPUArray& keys_out, const GPUArray& idx_in,
                         const GPUArray& idx_out, int64_t n, int64_t width);
/// How a radix sort ends: keys back to values (of the sorted dtype; `canonical` as the keys
/// were made) and indices to positions within rows of `row_len`, counted from the row's end
/// when `reversed`.
struct RadixFinish {
  bool canonical = false;
  int64_t row_len = 1;
  bool reversed = false;
};
/// keys = the ordered radix keys of the contiguous `src` (any non-complex dtype; the same
/// array for in place; `canonical`: see kernels::RadixKeyParams) and idx = 0, 1, ... when
/// `idx` is valid.
absl::Status LaunchRadixKey(const GPUArray& src, const GPUArray& keys, const GPUArray& idx,
                            bool canonical);
/// The finish alone, in place (when no pass ran): keys (valid or not) of `dtype` back to
/// values, idx (valid or not) to positions within rows.
absl::Status LaunchRadixFinish(const GPUArray& keys, const GPUArray& idx, DType dtype,
                               const RadixFinish& f);
/// One stable radix pass over digit bits [shift, shift + bits) of the transformed keys (or of
/// each element's row, idx / row_len, when `from_row`): keys_in -> keys_out with idx moving
/// along when valid; `counts` (uint32, 256 per tile) and `totals` (uint32, 256) are scratch.
/// The last pass finishes when `finish` is given; keys_out may then be invalid (not written).
absl::Status LaunchRadixPass(const GPUArray& keys_in, const GPUArray& keys_out,
                             const GPUArray& idx_in, const GPUArray& idx_out,
                             const GPUArray& counts, const GPUArray& totals, int shift, int bits,
                             bool from_row, int64_t row_len, const RadixFinish* finish);
/// The positions (int64, in order) of the true elements of the contiguous 1-D bool `mask`
/// (fewer than 2^32 - 4096 elements): per-tile counts, their scan, one read-back of the total,
/// then the positions.
absl::StatusOr<GPUArray> LaunchCompact(const GPUArray& mask);

// ---- kernel entry points ----
/// The radix key transform of p.keys / iota of p.idx, or with `inverse` the finishing step.
inline constinit KernelSlot<absl::Status(LaunchContext&, int, const kernels::RadixKeyParams&, bool)>
    kRadixKeyKernel{"radix_key"};
/// One radix pass over keys of key_bytes bytes (count, scan, scatter).
inline constinit KernelSlot<absl::Status(LaunchContext&, int, const kernels::RadixPassParams&)>
    kRadixPassKernel{"radix_pass"};
/// Per-tile counts of p.mask's true elements, scanned into offsets, and their total.
inline constinit KernelSlot<absl::Status(LaunchContext&, const kernels::CompactParams&)>
    kCompactCountKernel{"compact_count"};
/// The positions of p.mask's true elements, in order, into p.out.
inline constinit KernelSlot<absl::Status(LaunchContext&, const kernels::CompactParams&)>
    kCompactWriteKernel{"compact_write"};
/// p's insertion points, for values of `dtype`.
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::SearchParams&)>
    kSearchSortedKernel{"searchsorted"};
/// One merge-sort pass over keys of `dtype`.
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::MergeParams&)>
    kMergeKernel{"merge"};

}  // namespace pygpukit::ops
