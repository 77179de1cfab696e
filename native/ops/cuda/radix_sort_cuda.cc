// Host side of the CUDA radix sort (kernels in radix_sort.cu): grids of one block per tile for
// count and scatter, one block per digit for the scan, grid-stride launches for the transforms.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/cuda/launch_cuda.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/radix.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {

absl::Status RadixKey(hal::Stream& s, int key_bytes, const kernels::RadixKeyParams& p,
                      bool inverse) {
  return LaunchGridStride(
      s, absl::StrCat(inverse ? "pgk_radix_finish_" : "pgk_radix_key_", key_bytes), p.n, p);
}

absl::Status RadixPass(hal::Stream& s, int key_bytes, const kernels::RadixPassParams& p) {
  if (p.tiles > 0x7fffffff) {
    return NotImplementedError(absl::StrCat("sort: ", p.n, " elements need too many tiles"));
  }
  PGK_RETURN_IF_ERROR(LaunchBlocks(s, absl::StrCat("pgk_radix_count_", key_bytes), p.tiles,
                                   kernels::kRadixThreads, p));
  PGK_RETURN_IF_ERROR(LaunchBlocks(s, "pgk_radix_scan", kernels::kRadixBuckets, 1024, p));
  return LaunchBlocks(s, absl::StrCat("pgk_radix_scatter_", key_bytes), p.tiles,
                      kernels::kRadixThreads, p);
}

absl::Status CompactCount(hal::Stream& s, const kernels::CompactParams& p) {
  PGK_RETURN_IF_ERROR(LaunchBlocks(s, "pgk_compact_count", p.tiles, kernels::kRadixThreads, p));
  kernels::RadixPassParams scan{};
  scan.tiles = p.tiles;
  scan.counts = p.counts;
  scan.totals = p.totals;
  return LaunchBlocks(s, "pgk_radix_scan", 1, 1024, scan);
}

absl::Status CompactWrite(hal::Stream& s, const kernels::CompactParams& p) {
  return LaunchBlocks(s, "pgk_compact_write", p.tiles, kernels::kRadixThreads, p);
}

}  // namespace pygpukit::ops::cuda_kernels
