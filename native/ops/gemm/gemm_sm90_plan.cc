// The sm90 launch plan. Each rule names the measurement it rests on; change one only with a
// benchmarks/gemm.py run showing the new plan is at least as fast.
#include "ops/gemm/gemm_sm90_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit::ops {
namespace {

constexpr int kBM = 128;
constexpr int kMaxSplits = 16;
constexpr int64_t kMinSplitKBlocks = 4;  // a split shorter than this is mostly pipeline fill

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t Sm90KBlocks(int64_t k, int elem_bytes) { return CeilDiv(k, 128 / elem_bytes); }

absl::StatusOr<Sm90Plan> PlanSm90(const Sm90PlanInput& in) {
  if (in.force_bn != 0 && in.force_bn != 128 && in.force_bn != 256) {
    return NotImplementedError(
        absl::StrCat("matmul: sm90 tile width ", in.force_bn, " is not 128 or 256"));
  }
  if (in.force_splits < 0) {
    return NotImplementedError(
        absl::StrCat("matmul: sm90 split count ", in.force_splits, " is negative"));
  }
  if (in.m <= 0 || in.n <= 0 || in.k <= 0 || in.batch <= 0) {
    return NotImplementedError("matmul: sm90 kernels need non-empty operands");
  }
  const int64_t sms = std::max(in.sms, 1);
  const int64_t rows = CeilDiv(in.m, kBM) * in.batch;
  const int64_t kblocks = Sm90KBlocks(in.k, in.elem_bytes);
  auto tiles = [&](int bn) { return rows * CeilDiv(in.n, bn); };

  Sm90Plan plan;
  // 128 x 256 tiles reuse each A row over twice the columns; narrower ones only pay when the
  // wide grid would leave most SMs idle.
  plan.bn = in.force_bn != 0 ? in.force_bn : tiles(256) >= sms / 2 ? 256 : 128;
  // Wide tiles run in 2-CTA clusters that share each B tile through TMA multicast (half the B
  // traffic from L2). Clusters pay once each CTA runs several tiles (H200: 4096^3 1.01x vs
  // 0.98x of cuBLASLt); with about one tile per CTA their coupled pipelines cost more than the
  // L2 traffic they save (2048^3 0.94x vs 0.98x).
  // Forced splits imply no clusters unless a cluster is forced too (refused below).
  const bool clusters = in.clusters && in.force_splits <= 1;
  plan.cluster = in.force_cluster != 0 ? in.force_cluster
                 : plan.bn == 256 && clusters && sms >= 2 && tiles(256) >= 3 * sms ? 2
                                                                                   : 1;
  if (plan.cluster != 1 && !(plan.cluster == 2 && plan.bn == 256 && sms >= 2)) {
    return NotImplementedError(absl::StrCat("matmul: sm90 cluster size ", plan.cluster,
                                            " with tile width ", plan.bn,
                                            " is not built (1, or 2 with 256)"));
  }
  if (in.force_splits > 1 && plan.cluster > 1) {
    return NotImplementedError("matmul: sm90 split-K runs without clusters");
  }

  if (in.force_splits > 0) {
    plan.splits = static_cast<int>(std::min<int64_t>(in.force_splits, kblocks));
  } else if (plan.cluster == 1 && tiles(plan.bn) < sms * 3 / 4) {
    // A grid that leaves at least a quarter of the SMs idle: split K so that one wave of
    // (tile, split) units covers more of them. Modelled time in k-block steps of one 128 x 128
    // tile on one SM (about 0.28 us on an H100 at 989 TFLOP/s for bf16, and at half that for
    // TF32, whose k-blocks are half as deep): the larger of compute and DRAM time.
    //  * Compute: a unit's k-blocks plus a fixed cost: pipeline fill, and for a split the
    //    partial sums' round trip through L2, which is latency-bound and grows with the rows
    //    and splits of the tile (H100 bf16 768^3: 109 TFLOP/s unsplit, 61 / 53 / 32 with 2 / 3
    //    / 4 splits, i.e. about 14 steps per split of a full 128 x 128 tile).
    //  * DRAM: operands, result and partial sums over the bandwidth of the CTAs streaming. An
    //    H100 moves ~2.8 TB/s, 784 KB per step, once about half its SMs stream 128-row tiles
    //    (128 x 8192 x 8192: 64 CTAs 2.56 TB/s, 128 CTAs with 2 splits 2.14), but needs all of
    //    them for tiles with at most 64 rows in M (1 x 8192 x 8192: 64 CTAs 1.70 TB/s, 128 CTAs
    //    2.42; M = 1, K = 14336, N = 4096, 32 tiles: 1.29 / 2.03 / 2.29 / 2.41 TB/s with 1 / 2 /
    //    3 / 4 splits).
    //  * Split units run in one wave: a second, partial wave of units costs more than it saves.
    const double step_bytes = 784e3 * static_cast<double>(sms) / 132.0;
    const double operand_bytes =
        static_cast<double>(in.elem_bytes) * (in.m * in.k + in.k * in.n) * in.batch +
        static_cast<double>(in.out_bytes) * in.m * in.n * in.batch;
    const int64_t rows_per_tile = std::min<int64_t>(in.m, kBM);
    const double saturating = rows_per_tile <= 64 ? sms : sms / 2.0;
    auto cost = [&](int bn, int64_t s) {
      const int64_t units = tiles(bn) * s;
      const double fixed = s > 1 ? 3.0 + 14.0 * s * rows_per_tile / kBM * bn / 128 : 1.0;
      const double compute = static_cast<double>(CeilDiv(units, sms)) *
                             (static_cast<double>(CeilDiv(kblocks, s)) + fixed) * (bn / 128);
      const double partial_bytes = s > 1 ? 8.0 * tiles(bn) * rows_per_tile * bn * s : 0.0;
      const double streaming =
          std::min(1.0, static_cast<double>(std::min(units, sms)) / saturating);
      const double dram = (operand_bytes + partial_bytes) / (step_bytes * streaming);
      return std::max(compute, dram);
    };
    // A split plan must win by 10%, so near-ties keep the simpler launch.
    double best = cost(plan.bn, 1) * 0.9;
    const int64_t max_splits = std::min<int64_t>(kMaxSplits, kblocks / kMinSplitKBlocks);
    for (int bn : {128, 256}) {
      if (in.force_bn != 0 && bn != in.force_bn) continue;
      for (int64_t s = 2; s <= max_splits && tiles(bn) * s <= sms; ++s) {
        const double c = cost(bn, s);
        if (c < best) {
          best = c;
          plan.bn = bn;
          plan.splits = static_cast<int>(s);
        }
      }
    }
  }
  plan.split_kblocks = static_cast<int>(CeilDiv(kblocks, plan.splits));
  // Every split non-empty: e.g. 10 k-blocks in 4 splits of 3 leave 4 splits, 3 + 3 + 3 + 1.
  plan.splits = static_cast<int>(CeilDiv(kblocks, plan.split_kblocks));
  plan.tiles_m = CeilDiv(CeilDiv(in.m, kBM), plan.cluster);
  plan.tiles_n = CeilDiv(in.n, plan.bn);
  plan.tiles = plan.tiles_m * plan.tiles_n * in.batch;
  plan.dp_tiles = plan.splits > 1 ? plan.tiles / sms * sms : plan.tiles;
  plan.group_m = 8 / plan.cluster;  // H200: 4, 16 or 32 tile rows measured the same
  return plan;
}

}  // namespace pygpukit::ops
