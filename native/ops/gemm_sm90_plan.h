// How the Hopper GEMM kernels cover a problem: tile width, cluster size and the split of K
// across CTAs. Pure logic over the problem's dims and the SM count, so the plan is unit-tested
// on machines without a GPU; ops/cuda/gemm_sm90_cuda.cc launches what it returns.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace pygpukit::ops {

/// What the sm90 launch plan looks at. The force_* fields fix a choice (0 = free): the
/// autotuner and the PYGPUKIT_SM90_* measurement knobs set them.
struct Sm90PlanInput {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int elem_bytes = 2;     // 2 (bf16 / fp16) or 4 (float32 read as TF32)
  int sms = 1;            // streaming multiprocessors of the device
  int force_bn = 0;       // 128 or 256
  int force_cluster = 0;  // 1, or 2 with 256-wide tiles
  int force_splits = 0;   // K splits (1 turns split-K off)
  bool clusters = true;   // 2-CTA clusters allowed when they pay
};

/// One launch of the sm90 kernels. Work units are (tile, split) pairs walked by a persistent
/// grid; split s of a tile covers k-blocks [s * split_kblocks, (s + 1) * split_kblocks).
struct Sm90Plan {
  int bn = 256;           // tile width (tile height is 128)
  int cluster = 1;        // CTAs per cluster, stacked along M, sharing B through multicast
  int splits = 1;         // K splits per tile (1: no split, no workspace)
  int split_kblocks = 0;  // k-blocks (128 bytes of K each) per split
  int64_t tiles_m = 0;    // cluster tiles along M (ceil(m / (128 * cluster)))
  int64_t tiles_n = 0;    // tiles along N
  int group_m = 8;        // tile rows walked together by the grouped tile order
  /// Work units of the launch: tiles of every batch times splits.
  int64_t units(int64_t batch) const { return tiles_m * tiles_n * batch * splits; }
  /// float32 partial sums a split launch needs (0 without splits): for each 64-row half of
  /// every tile, one 64 x bn block per split.
  int64_t partial_floats(int64_t batch) const {
    return splits > 1 ? tiles_m * tiles_n * batch * 2 * splits * 64 * bn : 0;
  }
  /// Arrival counters a split launch needs (0 without splits): one per 64-row half of a tile.
  int64_t counters(int64_t batch) const { return splits > 1 ? tiles_m * tiles_n * batch * 2 : 0; }
};

/// K extent of one pipeline stage of the sm90 kernels: 128 bytes of K.
int64_t Sm90KBlocks(int64_t k, int elem_bytes);

/// The plan for `in`: NotImplementedError for a forced choice that is not built (a tile width
/// other than 128 / 256, clusters with 128-wide tiles, split-K with clusters).
///
/// Rules (measured in benchmarks/results/*-sm90-gemm*.json):
///  * 128 x 256 tiles unless that grid would leave half the SMs idle (then 128 x 128).
///  * 2-CTA clusters for 256-wide tiles once each CTA runs about three tiles or more.
///  * Split-K when the tile grid leaves SMs idle (skinny and few-tile long-K products): the
///    (tile width, splits) pair minimizing waves x (k-blocks per split + fixed cost) x tile width,
///    the fixed cost standing for pipeline fill and, with splits, the partial-sum round trip.
///    Splits keep at least 4 k-blocks each; the partial sums are added in split order, so the
///    result does not depend on which CTA finishes last.
absl::StatusOr<Sm90Plan> PlanSm90(const Sm90PlanInput& in);

}  // namespace pygpukit::ops
