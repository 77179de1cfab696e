// How the Hopper GEMM kernels cover a problem: tile width, cluster size and the split of K
// across CTAs. Pure logic over the problem's dims and the SM count, so the plan is unit-tested
// on machines without a GPU; ops/gemm/cuda/gemm_sm90_cuda.cc launches what it returns.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace pygpukit::ops {

/// What the sm90 launch plan looks at. The force_* fields fix a choice (0 = free): the
/// autotuner and the PYGPUKIT_SM90_* measurement knobs set them.
struct Sm90PlanInput {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int elem_bytes = 2;     // 2 (bf16 / fp16) or 4 (float32 read as TF32)
  int out_bytes = 2;      // bytes of one element of D
  int sms = 1;            // streaming multiprocessors of the device
  int force_bn = 0;       // 128 or 256
  int force_cluster = 0;  // 1, or 2 with 256-wide tiles
  int force_splits = 0;   // K splits (1 turns split-K off)
  bool clusters = true;   // 2-CTA clusters allowed when they pay
};

/// One launch of the sm90 kernels. A persistent grid walks work units: first `dp_tiles` whole
/// tiles (full waves, data-parallel), then each remaining tile as `splits` (tile, split) units,
/// split s covering k-blocks [s * split_kblocks, (s + 1) * split_kblocks). With splits == 1 every
/// tile is a whole unit (dp_tiles == tiles).
struct Sm90Plan {
  int bn = 256;           // tile width (tile height is 128)
  int cluster = 1;        // CTAs per cluster, stacked along M, sharing B through multicast
  int splits = 1;         // K splits of each tile after the first dp_tiles (1: none)
  int split_kblocks = 0;  // k-blocks (128 bytes of K each) per split
  int64_t tiles_m = 0;    // cluster tiles along M (ceil(m / (128 * cluster)))
  int64_t tiles_n = 0;    // tiles along N
  int64_t tiles = 0;      // cluster tiles of every batch
  int64_t dp_tiles = 0;   // tiles run whole before the split ones
  int group_m = 8;        // tile rows walked together by the grouped tile order
  /// Tiles whose K is split (0 without splits).
  int64_t split_tiles() const { return splits > 1 ? tiles - dp_tiles : 0; }
  /// Work units of the launch.
  int64_t units() const { return dp_tiles + split_tiles() * splits; }
  /// float32 partial sums a split launch needs: for each 64-row half of every split tile, one
  /// 64 x bn block per split.
  int64_t partial_floats() const { return split_tiles() * 2 * splits * 64 * bn; }
  /// Arrival counters a split launch needs: one per 64-row half of a split tile.
  int64_t counters() const { return split_tiles() * 2; }
};

/// K extent of one pipeline stage of the sm90 kernels: 128 bytes of K.
int64_t Sm90KBlocks(int64_t k, int elem_bytes);

/// The plan for `in`: NotImplementedError for a forced choice that is not built (a tile width
/// other than 128 / 256, clusters with 128-wide tiles, split-K with clusters).
///
/// Rules (measured in benchmarks/results/*-sm90-gemm*.json):
///  * 128 x 256 tiles unless that grid would leave half the SMs idle (then 128 x 128).
///  * 2-CTA clusters for 256-wide tiles once each CTA runs about three tiles or more.
///  * Otherwise split-K where the grid would leave a quarter of the SMs idle (skinny and
///    few-tile long-K products): among tile widths and split counts whose units fit one wave,
///    the least modelled time, the larger of compute (k-blocks per unit plus pipeline fill and
///    the partial sums' round trip) and DRAM traffic (operands, result and partial sums over
///    the bandwidth of the CTAs streaming); a split plan must win by 10%. Splits keep at least 4
///    k-blocks each; partial sums are added in split order, so the result does not depend on
///    which CTA finishes last. Forced splits on a grid of several waves split only the tiles
///    of the last, partial wave (measured slower than unsplit so far: the reduction of full
///    tiles is latency-bound).
absl::StatusOr<Sm90Plan> PlanSm90(const Sm90PlanInput& in);

}  // namespace pygpukit::ops
