// The sm90 launch plan. Each rule names the measurement it rests on; change one only with a
// benchmarks/gemm.py run showing the new plan is at least as fast.
#include "ops/gemm_sm90_plan.h"

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
  plan.cluster = in.force_cluster != 0 ? in.force_cluster
                 : plan.bn == 256 && in.clusters && sms >= 2 && tiles(256) >= 3 * sms ? 2
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
  } else if (plan.cluster == 1 && tiles(plan.bn) < sms) {
    // Time of the launch in k-block steps of one 128 x 128 tile: waves of units, each unit its
    // k-blocks plus a fixed cost (pipeline fill; with splits also writing and re-reading the
    // partial sums). A split plan must beat the unsplit one by 10%, so near-ties keep the
    // simpler launch.
    auto cost = [&](int bn, int64_t s) {
      const int64_t waves = CeilDiv(tiles(bn) * s, sms);
      return waves * (CeilDiv(kblocks, s) + (s > 1 ? 3 : 1)) * (bn / 128);
    };
    const int64_t unsplit = cost(plan.bn, 1);
    int64_t best = unsplit * 9 / 10;
    const int64_t max_splits = std::min<int64_t>(kMaxSplits, kblocks / kMinSplitKBlocks);
    for (int bn : {128, 256}) {
      if (in.force_bn != 0 && bn != in.force_bn) continue;
      for (int64_t s = 2; s <= max_splits; ++s) {
        const int64_t c = cost(bn, s);
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
  plan.group_m = 8 / plan.cluster;  // H200: 4, 16 or 32 tile rows measured the same
  return plan;
}

}  // namespace pygpukit::ops
