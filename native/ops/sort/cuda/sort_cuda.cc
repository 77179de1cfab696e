// Host side of the CUDA sort family: the radix sort (kernels in radix_sort.cu: grids of one
// block per tile for count and scatter, one block per digit for the scan, grid-stride launches
// for the transforms), nonzero's compaction, and the merge and searchsorted kernels (search.cu).
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/launch/cuda_launch.h"
#include "ops/sort/sort_kernels.h"

namespace pygpukit::ops {
namespace {

absl::Status RadixKeyCuda(LaunchContext& ctx, int key_bytes, const kernels::RadixKeyParams& p,
                          bool inverse) {
  return LaunchGridStride(
      ctx, absl::StrCat(inverse ? "pgk_radix_finish_" : "pgk_radix_key_", key_bytes), p.n, p);
}

absl::Status RadixPassCuda(LaunchContext& ctx, int key_bytes, const kernels::RadixPassParams& p) {
  if (p.tiles > 0x7fffffff) {
    return NotImplementedError(absl::StrCat("sort: ", p.n, " elements need too many tiles"));
  }
  PGK_RETURN_IF_ERROR(LaunchBlocks(ctx, absl::StrCat("pgk_radix_count_", key_bytes), p.tiles,
                                   kernels::kRadixThreads, p));
  PGK_RETURN_IF_ERROR(LaunchBlocks(ctx, "pgk_radix_scan", kernels::kRadixBuckets, 1024, p));
  return LaunchBlocks(ctx, absl::StrCat("pgk_radix_scatter_", key_bytes), p.tiles,
                      kernels::kRadixThreads, p);
}

absl::Status CompactCountCuda(LaunchContext& ctx, const kernels::CompactParams& p) {
  PGK_RETURN_IF_ERROR(LaunchBlocks(ctx, "pgk_compact_count", p.tiles, kernels::kRadixThreads, p));
  kernels::RadixPassParams scan{};
  scan.tiles = p.tiles;
  scan.counts = p.counts;
  scan.totals = p.totals;
  return LaunchBlocks(ctx, "pgk_radix_scan", 1, 1024, scan);
}

absl::Status CompactWriteCuda(LaunchContext& ctx, const kernels::CompactParams& p) {
  return LaunchBlocks(ctx, "pgk_compact_write", p.tiles, kernels::kRadixThreads, p);
}

absl::Status SearchSortedCuda(LaunchContext& ctx, DType dtype, const kernels::SearchParams& p) {
  return LaunchGridStride(ctx, absl::StrCat("pgk_searchsorted_", DTypeCode(dtype)), p.n, p);
}

absl::Status MergeCuda(LaunchContext& ctx, DType dtype, const kernels::MergeParams& p) {
  return LaunchGridStride(ctx, absl::StrCat("pgk_merge_", DTypeCode(dtype)), p.total, p);
}

PGK_REGISTER_KERNEL(kCompactCountKernel, kCuda, CompactCountCuda);
PGK_REGISTER_KERNEL(kCompactWriteKernel, kCuda, CompactWriteCuda);
PGK_REGISTER_KERNEL(kRadixKeyKernel, kCuda, RadixKeyCuda);
PGK_REGISTER_KERNEL(kRadixPassKernel, kCuda, RadixPassCuda);
PGK_REGISTER_KERNEL(kSearchSortedKernel, kCuda, SearchSortedCuda);
PGK_REGISTER_KERNEL(kMergeKernel, kCuda, MergeCuda);

}  // namespace
}  // namespace pygpukit::ops
