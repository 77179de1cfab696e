// The sm90 launch plan (ops/gemm/gemm_sm90_plan.h): tile width, clusters and split-K for the shapes
// the benchmark covers, forced choices, refusals, and the invariants every plan keeps.
#include "ops/gemm/gemm_sm90_plan.h"

#include <gtest/gtest.h>

#include "absl/status/status.h"

namespace pygpukit::ops {
namespace {

constexpr int kH100Sms = 132;

Sm90PlanInput Input(int64_t m, int64_t n, int64_t k, int64_t batch = 1, int elem_bytes = 2) {
  Sm90PlanInput in;
  in.m = m;
  in.n = n;
  in.k = k;
  in.batch = batch;
  in.elem_bytes = elem_bytes;
  in.sms = kH100Sms;
  return in;
}

Sm90Plan Plan(const Sm90PlanInput& in) {
  absl::StatusOr<Sm90Plan> plan = PlanSm90(in);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : Sm90Plan{};
}

TEST(Sm90Plan, KBlocksAre128BytesOfK) {
  EXPECT_EQ(Sm90KBlocks(64, 2), 1);
  EXPECT_EQ(Sm90KBlocks(65, 2), 2);
  EXPECT_EQ(Sm90KBlocks(4096, 2), 64);
  EXPECT_EQ(Sm90KBlocks(32, 4), 1);
  EXPECT_EQ(Sm90KBlocks(4096, 4), 128);
  EXPECT_EQ(Sm90KBlocks(1, 2), 1);
}

TEST(Sm90Plan, LargeSquaresUseWideTilesInClustersWithoutSplits) {
  const Sm90Plan p = Plan(Input(4096, 4096, 4096));
  EXPECT_EQ(p.bn, 256);
  EXPECT_EQ(p.cluster, 2);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.split_kblocks, 64);
  EXPECT_EQ(p.tiles_m, 16);  // cluster tiles: 32 CTA rows of 128 in pairs
  EXPECT_EQ(p.tiles_n, 16);
  EXPECT_EQ(p.group_m, 4);
  EXPECT_EQ(p.partial_floats(), 0);
  EXPECT_EQ(p.counters(), 0);
}

TEST(Sm90Plan, OneWaveOfWideTilesStaysUnsplit) {
  // 2048^3: 128 tiles of 128 x 256 on 132 SMs; two waves of half-K units would cost more.
  const Sm90Plan p = Plan(Input(2048, 2048, 2048));
  EXPECT_EQ(p.bn, 256);
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.splits, 1);
}

TEST(Sm90Plan, SkinnyProductsSplitK) {
  // M = 1, K = N = 4096: 32 tiles of 128 x 128 split four ways fill 128 SMs.
  Sm90Plan p = Plan(Input(1, 4096, 4096));
  EXPECT_EQ(p.bn, 128);
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.splits, 4);
  EXPECT_EQ(p.split_kblocks, 16);
  EXPECT_EQ(p.dp_tiles, 0);
  EXPECT_EQ(p.units(), 128);
  EXPECT_EQ(p.partial_floats(), 32 * 2 * 4 * 64 * 128);
  EXPECT_EQ(p.counters(), 64);
  // M = 1, K = N = 8192: 64 tiles in two splits (H100: 2.42 TB/s vs 1.70 unsplit).
  p = Plan(Input(1, 8192, 8192));
  EXPECT_EQ(p.bn, 128);
  EXPECT_EQ(p.splits, 2);
  EXPECT_EQ(p.split_kblocks, 64);
  // M = 128: 64 full-height tiles already stream at full bandwidth; the partial sums would
  // only add traffic (2.56 TB/s unsplit, 2.14 with 2 splits).
  EXPECT_EQ(Plan(Input(128, 8192, 8192)).splits, 1);
  // ... but 32 of them do not (N = 4096, K = 14336: 1.48 TB/s unsplit, 2.15 with 2 splits).
  EXPECT_EQ(Plan(Input(128, 4096, 14336)).splits, 2);
  // Long K, few tiles: M = 16, N = 4096, K = 14336.
  p = Plan(Input(16, 4096, 14336));
  EXPECT_EQ(p.splits, 4);
  EXPECT_EQ(p.split_kblocks, 56);
}

TEST(Sm90Plan, MidSizeSquaresStayUnsplit) {
  // The partial sums of full tiles cost more than the idle SMs (H100 bf16 768^3: 109 TFLOP/s
  // unsplit, 61 with 2 splits; 1536^3: 391 vs 156).
  for (int64_t n : {512, 768, 1024, 1536, 2048, 2560, 3072}) {
    for (int eb : {2, 4}) {
      SCOPED_TRACE(::testing::Message() << n << " eb " << eb);
      EXPECT_EQ(Plan(Input(n, n, n, 1, eb)).splits, 1);
    }
  }
}

TEST(Sm90Plan, ForcedSplitsOnSeveralWavesSplitTheLastOne) {
  // 3072^3: 288 tiles of 128 x 256 on 132 SMs, two full waves whole and the remaining 24
  // tiles in 4 splits each; forced splits turn clusters off.
  Sm90PlanInput in = Input(3072, 3072, 3072);
  in.force_splits = 4;
  const Sm90Plan p = Plan(in);
  EXPECT_EQ(p.bn, 256);
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.tiles, 288);
  EXPECT_EQ(p.dp_tiles, 264);
  EXPECT_EQ(p.split_tiles(), 24);
  EXPECT_EQ(p.units(), 264 + 24 * 4);
  EXPECT_EQ(p.partial_floats(), 24 * 2 * 4 * 64 * 256);
  EXPECT_EQ(p.counters(), 48);
  // A whole number of waves leaves nothing to split.
  in = Input(4224, 2048, 1024);  // 33 x 8 = 264 tiles
  in.force_splits = 2;
  const Sm90Plan q = Plan(in);
  EXPECT_EQ(q.split_tiles(), 0);
  EXPECT_EQ(q.units(), 264);
  EXPECT_EQ(q.partial_floats(), 0);
}

TEST(Sm90Plan, SplitsTheTestShapes) {
  // tests/python/test_gemm_sm90_split.py counts on these splitting on a 132-SM GPU.
  struct Shape {
    int64_t batch, m, k, n;
  };
  for (const Shape& s : {Shape{1, 1, 4096, 4096}, Shape{1, 65, 6000, 200}, Shape{1, 130, 8192, 136},
                         Shape{2, 16, 3000, 72}}) {
    for (int eb : {2, 4}) {
      SCOPED_TRACE(::testing::Message()
                   << s.batch << "x" << s.m << "x" << s.k << "x" << s.n << " eb " << eb);
      EXPECT_GT(Plan(Input(s.m, s.n, s.k, s.batch, eb)).splits, 1);
    }
  }
}

TEST(Sm90Plan, NearlyFullGridsStayUnsplit) {
  // M = 16, N = 14336: 112 tiles of 128 x 128 already occupy 85% of the SMs.
  const Sm90Plan p = Plan(Input(16, 14336, 4096));
  EXPECT_EQ(p.bn, 128);
  EXPECT_EQ(p.splits, 1);
  // Batches count as tiles.
  EXPECT_EQ(Plan(Input(1, 4096, 4096, /*batch=*/8)).splits, 1);
  // Short K leaves nothing worth splitting (fewer than 4 k-blocks per split).
  EXPECT_EQ(Plan(Input(1, 4096, 448)).splits, 1);
}

TEST(Sm90Plan, Tf32CountsKBlocksOf32Floats) {
  const Sm90Plan p = Plan(Input(1, 4096, 4096, 1, /*elem_bytes=*/4));
  EXPECT_EQ(p.bn, 128);
  EXPECT_GT(p.splits, 1);
  EXPECT_GE(p.splits * p.split_kblocks, 128);
  EXPECT_LT((p.splits - 1) * p.split_kblocks, 128);
}

TEST(Sm90Plan, ForcedSplitsLeaveNoEmptySplit) {
  Sm90PlanInput in = Input(1, 4096, 640);  // 10 k-blocks
  in.force_splits = 3;
  Sm90Plan p = Plan(in);
  EXPECT_EQ(p.split_kblocks, 4);
  EXPECT_EQ(p.splits, 3);  // 4 + 4 + 2
  in.force_splits = 4;
  p = Plan(in);
  EXPECT_EQ(p.split_kblocks, 3);
  EXPECT_EQ(p.splits, 4);  // 3 + 3 + 3 + 1
  in.force_splits = 16;    // more splits than k-blocks: one k-block each
  p = Plan(in);
  EXPECT_EQ(p.split_kblocks, 1);
  EXPECT_EQ(p.splits, 10);
  in.force_splits = 1;  // split-K off even where it would pay
  in.k = 4096;
  EXPECT_EQ(Plan(in).splits, 1);
}

TEST(Sm90Plan, ForcedTileWidthIsKeptWhenSplitting) {
  Sm90PlanInput in = Input(1, 4096, 4096);
  in.force_bn = 256;
  const Sm90Plan p = Plan(in);
  EXPECT_EQ(p.bn, 256);
  EXPECT_EQ(p.splits, 8);  // 16 wide tiles x 8 splits = 128 units
  EXPECT_EQ(p.tiles_n, 16);
}

TEST(Sm90Plan, ForcedClusterAndWidth) {
  Sm90PlanInput in = Input(512, 512, 512);
  in.force_bn = 256;
  in.force_cluster = 2;
  const Sm90Plan p = Plan(in);
  EXPECT_EQ(p.cluster, 2);
  EXPECT_EQ(p.tiles_m, 2);
  EXPECT_EQ(p.group_m, 4);
  EXPECT_EQ(p.splits, 1);  // clusters never split
  // Clusters can be switched off.
  in = Input(8192, 8192, 8192);
  in.clusters = false;
  EXPECT_EQ(Plan(in).cluster, 1);
}

TEST(Sm90Plan, RefusesWhatIsNotBuilt) {
  Sm90PlanInput in = Input(1024, 1024, 1024);
  in.force_bn = 64;
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
  in.force_bn = 128;
  in.force_cluster = 2;  // clusters need 256-wide tiles
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
  in.force_bn = 256;
  in.force_splits = 2;  // split-K runs without clusters
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
  in = Input(1024, 1024, 1024);
  in.force_cluster = 3;
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
  in = Input(1024, 1024, 1024);
  in.force_splits = -1;
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(Input(0, 16, 16)).status()));
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(Input(16, 16, 0)).status()));
  in = Input(1, 4096, 4096);
  in.sms = 1;  // a one-SM device cannot host a 2-CTA cluster
  in.force_cluster = 2;
  in.force_bn = 256;
  EXPECT_TRUE(absl::IsUnimplemented(PlanSm90(in).status()));
}

TEST(Sm90Plan, InvariantsOverAShapeSweep) {
  for (int64_t m : {1, 7, 64, 65, 128, 129, 1000, 4096}) {
    for (int64_t n : {8, 100, 1024, 4096, 14336}) {
      for (int64_t k : {1, 63, 64, 1000, 4096, 14336}) {
        for (int eb : {2, 4}) {
          for (int sms : {1, 8, 132}) {
            for (int64_t batch : {1, 3}) {
              Sm90PlanInput in = Input(m, n, k, batch, eb);
              in.sms = sms;
              const Sm90Plan p = Plan(in);
              const int64_t kblocks = Sm90KBlocks(k, eb);
              SCOPED_TRACE(::testing::Message() << batch << "x" << m << "x" << n << "x" << k
                                                << " eb " << eb << " sms " << sms);
              EXPECT_TRUE(p.bn == 128 || p.bn == 256);
              EXPECT_GE(p.splits, 1);
              EXPECT_LE(p.splits, 16);
              EXPECT_GE(p.split_kblocks, 1);
              // Every split covers at least one k-block and together they cover K exactly.
              EXPECT_LT(int64_t{p.splits - 1} * p.split_kblocks, kblocks);
              EXPECT_GE(int64_t{p.splits} * p.split_kblocks, kblocks);
              if (p.splits > 1) {
                EXPECT_EQ(p.cluster, 1);
                EXPECT_GE(p.split_kblocks, 4);
                // Only grids that would leave SMs idle split, in one wave of units.
                EXPECT_EQ(p.dp_tiles, 0);
                EXPECT_LE(p.units(), sms);
              }
              // Forced splits: every split non-empty, only the last wave's tiles split.
              in.force_splits = 5;
              const Sm90Plan f = Plan(in);
              EXPECT_LT(int64_t{f.splits - 1} * f.split_kblocks, kblocks);
              EXPECT_GE(int64_t{f.splits} * f.split_kblocks, kblocks);
              EXPECT_EQ(f.cluster, 1);
              if (f.splits > 1) {
                EXPECT_EQ(f.dp_tiles % sms, 0);
                EXPECT_LT(f.tiles - f.dp_tiles, sms);
              }
              EXPECT_EQ(p.tiles_n, (n + p.bn - 1) / p.bn);
              EXPECT_EQ(p.tiles_m, ((m + 127) / 128 + p.cluster - 1) / p.cluster);
              EXPECT_EQ(p.tiles, p.tiles_m * p.tiles_n * batch);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace pygpukit::ops
