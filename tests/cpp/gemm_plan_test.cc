// How a CUDA product runs (ops/gemm/gemm_plan.h, gemm_accepts.h, gemm_problem.h): pure logic,
// so every decision is checked here without a GPU. Pointers are fake addresses; nothing is read.
#include "ops/gemm/gemm_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "ops/gemm/gemm_accepts.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"

namespace pygpukit::ops {
namespace {

constexpr GemmTarget kHopper{9, 0, true};
constexpr GemmTarget kHopperPartitioned{9, 0, true, true};
constexpr GemmTarget kAmpere{8, 0, false};
constexpr GemmTarget kTuring{7, 5, true};

const void* Addr(uintptr_t a) { return reinterpret_cast<const void*>(a); }

// A dense row-major A (m x k), B (k x n) as B^T row-major when `b_kmajor` (a linear layer's
// weight), else row-major, D (m x n); 16-byte aligned.
GemmProblem Dense(DType in, int64_t m, int64_t n, int64_t k, bool b_kmajor = false) {
  GemmProblem p;
  p.in = p.out = in;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {Addr(0x100000), m * k, k, 1};
  p.b = b_kmajor ? GemmOperand{Addr(0x400000), k * n, 1, k}
                 : GemmOperand{Addr(0x400000), k * n, n, 1};
  p.d = reinterpret_cast<void*>(0x800000);
  p.d_batch = m * n;
  p.d_row = n;
  return p;
}

GemmProblem WithBias(GemmProblem p) {
  p.bias = Addr(0xC00000);
  return p;
}

// The chooser auto mode uses without the tuner.
auto Rules(const GemmTarget& t) {
  return [t](const GemmProblem& q) { return RuleChoice(q, t); };
}

TEST(GemmProblem, FusedIsAnythingBeyondStoringTheProductInTheInputDtype) {
  GemmProblem p = Dense(DType::BFloat16, 64, 64, 64);
  EXPECT_TRUE(p.plain());
  EXPECT_FALSE(p.fused());
  p.out = DType::Float32;
  EXPECT_TRUE(p.plain());
  EXPECT_TRUE(p.fused());
  GemmProblem q = Dense(DType::Float32, 8, 8, 8);
  q.alpha = 2.0;
  EXPECT_TRUE(q.fused());
  q = WithBias(Dense(DType::Float32, 8, 8, 8));
  EXPECT_TRUE(q.fused());
  q = Dense(DType::Float32, 8, 8, 8);
  q.act = kernels::kActGelu;
  EXPECT_TRUE(q.fused());
  EXPECT_FALSE(q.tf32());
  q.options.precision = MatmulPrecision::kTF32;
  EXPECT_TRUE(q.tf32());
}

// A grouped product (one launch over several row groups, each with its own B) runs on the sm90
// kernels only, on Hopper with an sm_90a build; B's TMA view has one matrix per group; its cost
// reads every group's B; it never runs on the preemptible kernels.
TEST(GemmProblem, GroupedProductsRunOnSm90Only) {
  GemmProblem p = Dense(DType::BFloat16, 600, 300, 200, true);
  p.a.batch = 0;  // as GroupedMatmul builds it: A and D one matrix each
  p.d_batch = 0;
  p.b.batch = 300 * 200;
  p.groups = 7;
  p.group_tiles_m = 9;
  p.group_table = reinterpret_cast<const int64_t*>(0xF00000);
  ASSERT_TRUE(p.grouped());
  EXPECT_TRUE(GemmAccepts(GemmFamily::kSm90, p, kHopper).ok());
  for (GemmFamily f : {GemmFamily::kCublasLt, GemmFamily::kSm80, GemmFamily::kSimt}) {
    const absl::Status st = GemmAccepts(f, p, kHopper);
    EXPECT_TRUE(absl::IsUnimplemented(st)) << st;
    EXPECT_NE(st.message().find("grouped_matmul: one launch over all groups"), std::string::npos)
        << st;
  }
  EXPECT_FALSE(GemmAccepts(GemmFamily::kSm90, p, kAmpere).ok());
  EXPECT_FALSE(GemmPreemptibleAccepts(p, kHopper));
  GemmProblem batched = p;
  batched.batch = 2;
  EXPECT_TRUE(absl::IsUnimplemented(GemmAccepts(GemmFamily::kSm90, batched, kHopper)));
  // The kernel reads the group as the batch index: A or D with a batch stride would be read or
  // written at the group's offset.
  GemmProblem strided_a = p;
  strided_a.a.batch = 600 * 200;
  EXPECT_TRUE(absl::IsUnimplemented(GemmAccepts(GemmFamily::kSm90, strided_a, kHopper)));
  GemmProblem strided_d = p;
  strided_d.d_batch = 600 * 300;
  EXPECT_TRUE(absl::IsUnimplemented(GemmAccepts(GemmFamily::kSm90, strided_d, kHopper)));

  const kernels::GemmParams params = ParamsOf(p);
  EXPECT_EQ(params.groups, 7);
  EXPECT_EQ(params.group_table, p.group_table);
  absl::StatusOr<std::pair<Sm90Operand, Sm90Operand>> ops = Sm90Operands(params, 2);
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_EQ(ops->first.batch, 1);
  EXPECT_EQ(ops->second.batch, 7);
  EXPECT_EQ(ops->second.batch_stride, 300 * 200);

  GemmProblem one = p;
  one.groups = 0;
  EXPECT_EQ(GemmCost(p).bytes - GemmCost(one).bytes, 6 * 200 * 300 * 2);
  EXPECT_EQ(GemmCost(p).flops, GemmCost(one).flops);
  EXPECT_EQ(kernels::GroupedTableSize(7), 16);
}

// Auto mode runs a grouped product as one launch where a loop of per-group products would be
// launch-bound (many small experts), and as the loop where each group's product is long.
TEST(GemmPlan, GroupedOneLaunchWhereTheLoopIsLaunchBound) {
  auto even = [](int64_t groups, int64_t rows) {
    std::vector<int64_t> ends(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) ends[g] = (g + 1) * rows;
    return ends;
  };
  EXPECT_TRUE(GroupedOneLaunchPays(even(64, 64), 2048, 1536, 2));    // Qwen-MoE-like experts
  EXPECT_TRUE(GroupedOneLaunchPays(even(5, 40), 200, 296, 2));       // small groups
  EXPECT_TRUE(GroupedOneLaunchPays(even(32, 16), 7168, 4096, 2));    // DeepSeek-V3-like decode
  EXPECT_FALSE(GroupedOneLaunchPays(even(8, 8), 4096, 14336, 2));    // decode: a long B read
  EXPECT_FALSE(GroupedOneLaunchPays(even(32, 256), 7168, 4096, 2));  // long per-group products
  EXPECT_FALSE(GroupedOneLaunchPays(even(8, 1024), 4096, 14336, 2));
  EXPECT_FALSE(GroupedOneLaunchPays({700}, 200, 296, 2));  // one group: an ordinary product
  EXPECT_FALSE(GroupedOneLaunchPays({0, 0, 700, 700}, 200, 296, 2));
  EXPECT_FALSE(GroupedOneLaunchPays({}, 200, 296, 2));
  // Empty groups do not lower the mean.
  EXPECT_EQ(GroupedOneLaunchPays({0, 64, 64, 128}, 2048, 1536, 2),
            GroupedOneLaunchPays({64, 128}, 2048, 1536, 2));
}

// A scaled product sliced into row blocks (a paced task's budget) keeps each row's scale: a
// per-row scale of A moves with the rows; block scales (laid out for the whole product) are
// never sliced. The sm90 kernels see the per-tensor / per-row kinds and refuse block scales.
TEST(GemmProblem, ScaledProductsSliceTheirRowScales) {
  GemmProblem p = Dense(DType::Float8E4M3Fn, 1024, 256, 512, true);
  p.out = DType::BFloat16;
  const float* sa = reinterpret_cast<const float*>(0xA00000);
  const float* sb = reinterpret_cast<const float*>(0xB00000);
  p.scale_a = {sa, GemmScaleMode::kOuter};
  p.scale_b = {sb, GemmScaleMode::kTensor};
  const GemmProblem s = RowSlice(p, 128, 256);
  EXPECT_EQ(s.scale_a.ptr, sa + 128);
  EXPECT_EQ(s.scale_b.ptr, sb);
  const int64_t budget = 2 * 256 * 512 * 256;  // 256 rows
  EXPECT_EQ(RowBlockRows(p, budget), 256);
  GemmProblem blocks = p;
  blocks.scale_a.mode = GemmScaleMode::kBlocks1x128;
  EXPECT_EQ(RowBlockRows(blocks, budget), 1024);
  GemmProblem tensor = p;
  tensor.scale_a.mode = GemmScaleMode::kTensor;
  EXPECT_EQ(RowSlice(tensor, 128, 256).scale_a.ptr, sa);
  // Blocks of fewer rows keep the per-row scale's start 16-byte aligned (4 floats).
  EXPECT_EQ(RowBlockRows(p, 2 * 256 * 512 * 6), 4);
  EXPECT_EQ(RowBlockRows(tensor, 2 * 256 * 512 * 6), 6);

  const kernels::GemmParams params = ParamsOf(p);
  EXPECT_EQ(params.scale_kind_a, kernels::kScaleOuter);
  EXPECT_EQ(params.scale_kind_b, kernels::kScaleTensor);
  EXPECT_EQ(params.scale_a, sa);
  EXPECT_TRUE(GemmAccepts(GemmFamily::kSm90, p, kHopper).ok())
      << GemmAccepts(GemmFamily::kSm90, p, kHopper);
  const absl::Status st = GemmAccepts(GemmFamily::kSm90, blocks, kHopper);
  EXPECT_TRUE(absl::IsUnimplemented(st));
  EXPECT_NE(st.message().find("block scales run on cuBLASLt"), std::string::npos) << st;
  GemmProblem e5 = p;
  e5.in_b = DType::Float8E5M2;
  EXPECT_NE(GemmAccepts(GemmFamily::kSm90, e5, kHopper).message().find("float8_e4m3fn"),
            std::string::npos);
  EXPECT_EQ(ParamsOf(Dense(DType::BFloat16, 8, 8, 8)).scale_kind_a, kernels::kScaleNone);
}

// The tune cache's keys are on disk: TuneKeyOf must keep producing these exact strings.
TEST(GemmProblem, TuneKeysAreStable) {
  EXPECT_EQ(TuneKeyText(TuneKeyOf(Dense(DType::BFloat16, 1024, 1024, 1024))),
            "in=bfloat16,out=bfloat16,tf32=0,m=1024,n=1024,k=1024,batch=1,a=k,b=n,fused=0,"
            "align=16");
  GemmProblem f = WithBias(Dense(DType::Float32, 257, 200, 136, true));
  f.c = {Addr(0xE00000), 257 * 200, 200, 1};
  f.beta = 0.5;
  f.options.precision = MatmulPrecision::kTF32;
  EXPECT_EQ(TuneKeyText(TuneKeyOf(f)),
            "in=float32,out=float32,tf32=1,m=257,n=200,k=136,batch=1,a=k,b=k,fused=1,align=16");
  GemmProblem o = Dense(DType::Float16, 16, 24, 40);
  o.out = DType::Float32;
  o.a = {Addr(0x100000), 16 * 40, 1, 16};  // M-major A (a transposed view)
  o.batch = 3;
  EXPECT_EQ(TuneKeyText(TuneKeyOf(o)),
            "in=float16,out=float32,tf32=0,m=16,n=24,k=40,batch=3,a=m,b=n,fused=1,align=16");
  GemmProblem mis = Dense(DType::BFloat16, 8, 8, 7);  // 7-element rows: not 16-byte multiples
  EXPECT_EQ(TuneKeyText(TuneKeyOf(mis)),
            "in=bfloat16,out=bfloat16,tf32=0,m=8,n=8,k=7,batch=1,a=k,b=n,fused=0,align=any");
}

TEST(GemmProblem, RowSliceOffsetsAAndDAndCButSharesBAndBias) {
  GemmProblem p = WithBias(Dense(DType::Float16, 512, 64, 32));
  p.out = DType::Float32;
  p.c = {Addr(0xE00000), 0, 64, 1};
  p.beta = 1.0;
  const GemmProblem s = RowSlice(p, 128, 100);
  EXPECT_EQ(s.m, 100);
  EXPECT_EQ(s.a.ptr, Addr(0x100000 + 128 * 32 * 2));
  EXPECT_EQ(s.d, Addr(0x800000 + 128 * 64 * 4));
  EXPECT_EQ(s.c.ptr, Addr(0xE00000 + 128 * 64 * 4));
  EXPECT_EQ(s.b.ptr, p.b.ptr);
  EXPECT_EQ(s.bias, p.bias);
  const GemmProblem plain = PlainInto(p, reinterpret_cast<void*>(0x900000), DType::Float32);
  EXPECT_TRUE(plain.plain());
  EXPECT_EQ(plain.c.ptr, nullptr);
  EXPECT_EQ(plain.d_batch, 512 * 64);
  EXPECT_EQ(plain.d_row, 64);
}

TEST(GemmPlan, ZeroContractionWithAnEpilogueRunsTheEpilogueOverZeros) {
  GemmProblem p = WithBias(Dense(DType::BFloat16, 64, 64, 0));
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kHopper, Rules(kHopper));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->fused);
  EXPECT_TRUE(plan->zero_product);
}

TEST(GemmPlan, HopperFusesBf16EpiloguesOnTheSm90Kernels) {
  for (bool b_kmajor : {false, true}) {
    GemmProblem p = WithBias(Dense(DType::BFloat16, 1024, 1024, 1024, b_kmajor));
    p.act = kernels::kActGelu;
    absl::StatusOr<GemmPlan> plan = PlanGemm(p, kHopper, Rules(kHopper));
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->fused);
    EXPECT_EQ(plan->choice.family, GemmFamily::kSm90);
  }
}

// Few rows with a bias on Hopper: cuBLASLt's own bias epilogue (measured ahead of the fused
// sm90 and sm80 kernels), fused.
TEST(GemmPlan, SmallMFusedGoesToCublasLtOnHopper) {
  const GemmProblem p = WithBias(Dense(DType::BFloat16, 64, 1024, 1024));
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kHopper, Rules(kHopper));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->fused);
  EXPECT_EQ(plan->choice.family, GemmFamily::kCublasLt);
}

// The rules pick sm80 for a fused bf16 product on Ampere, but its kernels need a row-major A;
// cuBLASLt has no SiLU: the plain product runs (on cuBLASLt, into float32) and the epilogue
// follows as its own pass. Decided here, before any launch.
TEST(GemmPlan, AnEpilogueNoFamilyFusesRunsUnfused) {
  GemmProblem p = WithBias(Dense(DType::BFloat16, 256, 256, 256));
  p.act = kernels::kActSilu;
  p.a = {Addr(0x100000), 256 * 256, 1, 256};  // M-major A
  EXPECT_FALSE(GemmAccepts(GemmFamily::kSm80, p, kAmpere).ok());
  EXPECT_FALSE(RuleChoice(p, kAmpere).has_value());
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kAmpere, Rules(kAmpere));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->fused);
  EXPECT_FALSE(plan->zero_product);
  EXPECT_EQ(plan->choice.family, GemmFamily::kCublasLt);
  EXPECT_EQ(GemmAccumulator(p), DType::Float32);
}

// Scaled 8-bit float products: cuBLASLt's FP8 matmul takes "TN" operands, and per-row and
// block scales only on SM 9.x.
TEST(GemmAccepts, CublasLtScaledProducts) {
  const GemmTarget ada{8, 9, false};
  GemmProblem p = Dense(DType::Float8E4M3Fn, 64, 48, 256, /*b_kmajor=*/true);
  p.out = DType::BFloat16;
  p.options.backend = MatmulBackend::kCublasLt;
  const float* s = reinterpret_cast<const float*>(0xF00000);
  p.scale_a = {s, GemmScaleMode::kTensor};
  p.scale_b = {s, GemmScaleMode::kTensor};
  auto lt = [&](const GemmProblem& q, const GemmTarget& t) {
    return GemmAccepts(GemmFamily::kCublasLt, q, t);
  };
  EXPECT_TRUE(lt(p, kHopper).ok()) << lt(p, kHopper);
  EXPECT_TRUE(lt(p, ada).ok());
  EXPECT_TRUE(absl::IsUnimplemented(lt(p, kAmpere)));
  // sm80 and SIMT never take 8-bit floats; sm90 takes e4m3 with per-tensor / per-row scales
  // on Hopper (GemmProblem.ScaledProductsSliceTheirRowScales), not on Ada.
  for (GemmFamily f : {GemmFamily::kSm80, GemmFamily::kSimt}) {
    EXPECT_FALSE(GemmAccepts(f, p, kHopper).ok()) << GemmFamilyName(f);
  }
  EXPECT_TRUE(GemmAccepts(GemmFamily::kSm90, p, kHopper).ok());
  EXPECT_FALSE(GemmAccepts(GemmFamily::kSm90, p, ada).ok());
  GemmProblem q = p;
  q.in_b = DType::Float8E5M2;
  EXPECT_TRUE(lt(q, kHopper).ok());  // e4m3 x e5m2 mixes
  q.in = DType::Float8E5M2;
  EXPECT_FALSE(lt(q, kHopper).ok());  // e5m2 x e5m2 does not
  q = p;
  q.b = {Addr(0x400000), 256 * 48, 48, 1};  // N-major B
  EXPECT_FALSE(lt(q, kHopper).ok());
  q = Dense(DType::Float8E4M3Fn, 64, 40, 256, true);  // N = 40: not a multiple of 16
  q.out = DType::BFloat16;
  q.scale_a = q.scale_b = p.scale_a;
  EXPECT_FALSE(lt(q, kHopper).ok());
  q = p;
  q.scale_a.mode = q.scale_b.mode = GemmScaleMode::kOuter;
  EXPECT_TRUE(lt(q, kHopper).ok());
  EXPECT_FALSE(lt(q, ada).ok());
  q.scale_b.mode = GemmScaleMode::kTensor;  // the op makes both vectors first
  EXPECT_FALSE(lt(q, kHopper).ok());
  q = p;
  q.scale_a.mode = GemmScaleMode::kBlocks1x128;
  q.scale_b.mode = GemmScaleMode::kBlocks128x128;
  EXPECT_TRUE(lt(q, kHopper).ok());
  q.scale_b.mode = GemmScaleMode::kBlocks1x128;
  EXPECT_TRUE(lt(q, kHopper).ok());
  q.scale_a.mode = GemmScaleMode::kBlocks128x128;
  q.scale_b.mode = GemmScaleMode::kBlocks128x128;
  EXPECT_FALSE(lt(q, kHopper).ok());
  q.scale_a.mode = GemmScaleMode::kBlocks1x128;
  q.bias = Addr(0xC00000);
  EXPECT_FALSE(lt(q, kHopper).ok());  // no bias with block scales: the epilogue runs apart
  q = WithBias(p);
  EXPECT_TRUE(lt(q, kHopper).ok());
  q.out = DType::Float32;
  EXPECT_FALSE(lt(q, kHopper).ok());
  q = p;
  q.act = kernels::kActGelu;
  EXPECT_FALSE(lt(q, kHopper).ok());
  // Planned as forced cuBLASLt: its plain product, then the epilogue pass with GELU's erf form.
  absl::StatusOr<GemmPlan> plan = PlanGemm(q, kHopper, Rules(kHopper));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->fused);
  plan = PlanGemm(q, kAmpere, Rules(kAmpere));
  EXPECT_TRUE(absl::IsUnimplemented(plan.status()));
}

// The same product with a bias and GELU's tanh form: cuBLASLt fuses those itself.
TEST(GemmPlan, CublasLtFusesItsOwnEpiloguesWhereOursCannot) {
  GemmProblem p = WithBias(Dense(DType::BFloat16, 256, 256, 256));
  p.act = kernels::kActGeluTanh;
  p.a = {Addr(0x100000), 256 * 256, 1, 256};  // M-major A
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kAmpere, Rules(kAmpere));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->fused);
  EXPECT_EQ(plan->choice.family, GemmFamily::kCublasLt);
}

TEST(GemmAccepts, CublasLtEpiloguesAreBiasReluGeluTanhAlphaAndRowMajorC) {
  auto lt = [](const GemmProblem& p) { return GemmAccepts(GemmFamily::kCublasLt, p, kHopper); };
  for (DType t : {DType::BFloat16, DType::Float16, DType::Float32}) {
    GemmProblem p = WithBias(Dense(t, 64, 48, 32));
    EXPECT_TRUE(lt(p).ok()) << DTypeName(t);
    for (auto act : {kernels::kActRelu, kernels::kActGeluTanh}) {
      p.act = act;
      EXPECT_TRUE(lt(p).ok()) << DTypeName(t) << " act " << act;
    }
    for (auto act : {kernels::kActGelu, kernels::kActSilu}) {
      p.act = act;
      EXPECT_TRUE(absl::IsUnimplemented(lt(p))) << DTypeName(t) << " act " << act;
    }
    GemmProblem c = Dense(t, 64, 48, 32);
    c.alpha = 0.5;
    c.beta = 2.0;
    c.c = {Addr(0xE00000), 64 * 48, 48, 1};
    EXPECT_TRUE(lt(c).ok());
    c.c = {Addr(0xE00000), 64 * 48, 1, 64};  // column-major C
    EXPECT_FALSE(lt(c).ok());
    c.c = {Addr(0xE00000), 0, 0, 1};  // one row broadcast over M
    EXPECT_FALSE(lt(c).ok());
  }
  GemmProblem u = WithBias(Dense(DType::BFloat16, 64, 48, 33));  // 33-element rows: unaligned
  EXPECT_FALSE(lt(u).ok());
  u.bias = nullptr;
  EXPECT_TRUE(lt(u).ok()) << "plain products need no alignment";
  GemmProblem h = WithBias(Dense(DType::BFloat16, 64, 48, 32));
  h.out = DType::Float32;
  EXPECT_TRUE(lt(h).ok());
  h.out = DType::Float16;
  EXPECT_FALSE(lt(h).ok());
  GemmProblem d = Dense(DType::Float64, 64, 48, 32);
  EXPECT_TRUE(lt(d).ok());
  d.alpha = 2.0;  // no epilogues for float64 (nor complex)
  EXPECT_FALSE(lt(d).ok());
}

TEST(GemmPlan, TheChooserIsAskedForTheProblemThenItsPlainProduct) {
  GemmProblem p = WithBias(Dense(DType::Float64, 32, 32, 32));
  std::vector<GemmProblem> asked;
  auto choose = [&](const GemmProblem& q) -> std::optional<GemmChoice> {
    asked.push_back(q);
    if (!q.plain()) return std::nullopt;
    return GemmChoice{GemmFamily::kSimt};
  };
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kHopper, choose);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->fused);
  EXPECT_EQ(plan->choice.family, GemmFamily::kSimt);
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_FALSE(asked[0].plain());
  EXPECT_TRUE(asked[1].plain());
  EXPECT_EQ(asked[1].out, DType::Float64);
}

TEST(GemmPlan, ForcedCublasLtServesOtherEpiloguesUnfused) {
  GemmProblem p = WithBias(Dense(DType::Float32, 128, 128, 128));
  p.options.backend = MatmulBackend::kCublasLt;
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kHopper, Rules(kHopper));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->fused);  // a bias is cuBLASLt's own epilogue
  EXPECT_EQ(plan->choice.family, GemmFamily::kCublasLt);
  p.act = kernels::kActSilu;
  plan = PlanGemm(p, kHopper, Rules(kHopper));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->fused);
  EXPECT_EQ(plan->choice.family, GemmFamily::kCublasLt);
}

TEST(GemmPlan, AForcedFamilyThatCannotServeSaysWhy) {
  GemmProblem p = Dense(DType::BFloat16, 128, 128, 128);
  p.options.backend = MatmulBackend::kSm80;
  absl::StatusOr<GemmPlan> plan = PlanGemm(p, kTuring, Rules(kTuring));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::IsUnimplemented(plan.status()));
  EXPECT_NE(plan.status().message().find("compute capability 8.0 or newer; device has 7.5"),
            std::string::npos)
      << plan.status();

  GemmProblem d = Dense(DType::Float64, 128, 128, 128);
  d.options.backend = MatmulBackend::kSm90;
  plan = PlanGemm(d, kHopper, Rules(kHopper));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("sm90 kernels take bfloat16, float16 or float32"),
            std::string::npos)
      << plan.status();
  EXPECT_NE(plan.status().message().find("m 128, n 128, k 128"), std::string::npos);

  GemmProblem h = Dense(DType::BFloat16, 128, 128, 128);
  h.options.backend = MatmulBackend::kSm90;
  plan = PlanGemm(h, kAmpere, Rules(kAmpere));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("sm_90a build"), std::string::npos) << plan.status();
  plan = PlanGemm(h, GemmTarget{8, 0, true}, Rules(kAmpere));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("compute capability 9.x GPU, this is 8.0"),
            std::string::npos)
      << plan.status();

  GemmProblem s = Dense(DType::BFloat16, 128, 128, 128);
  s.options.backend = MatmulBackend::kSimt;
  plan = PlanGemm(s, kHopper, Rules(kHopper));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("CUDA-core GEMM kernels take float32 or float64"),
            std::string::npos);
}

TEST(GemmPlan, PreemptibleKernelsServeUnpartitioned16BitProductsOnHopper) {
  const GemmProblem p = WithBias(Dense(DType::BFloat16, 1024, 1024, 1024));
  EXPECT_TRUE(GemmPreemptibleAccepts(p, kHopper));
  EXPECT_FALSE(GemmPreemptibleAccepts(p, kHopperPartitioned));
  EXPECT_FALSE(GemmPreemptibleAccepts(p, kAmpere));
  GemmProblem forced = p;
  forced.options.backend = MatmulBackend::kSm80;
  EXPECT_FALSE(GemmPreemptibleAccepts(forced, kHopper));
  forced.options.backend = MatmulBackend::kSm90;
  EXPECT_TRUE(GemmPreemptibleAccepts(forced, kHopper));
  GemmProblem tf32 = Dense(DType::Float32, 1024, 1024, 1024, true);
  tf32.options.precision = MatmulPrecision::kTF32;
  EXPECT_TRUE(GemmAccepts(GemmFamily::kSm90, tf32, kHopper).ok());
  EXPECT_FALSE(GemmPreemptibleAccepts(tf32, kHopper));
  EXPECT_FALSE(GemmPreemptibleAccepts(Dense(DType::BFloat16, 64, 64, 0), kHopper));
}

// The row-block formula as it stood in the generic launch router before GEMM had its own
// family (element-stride arithmetic), the reference RowBlockRows must reproduce.
int64_t OldRows(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t a_row, int64_t d_row,
                int in, int out, int64_t budget) {
  int64_t rows = m;
  const int64_t per_row = 2 * batch * n * k;
  if (budget > 0 && per_row > 0 && m > budget / per_row) {
    rows = std::max<int64_t>(1, budget / per_row);
    auto period = [&](int64_t row_elems) {
      const int64_t bytes = std::abs(row_elems) * in;
      return bytes == 0 ? int64_t{1} : 256 / std::gcd(int64_t{256}, bytes);
    };
    const int64_t pa = period(a_row), pc = period(d_row * out / in);
    int64_t align = pa / std::gcd(pa, pc) * pc;
    if (rows >= 128) align = align / std::gcd(align, int64_t{128}) * 128;
    rows = std::max(align, rows - rows % align);
  }
  return rows;
}

TEST(GemmPlan, RowBlocksMatchTheFormulaTheyReplaced) {
  struct Case {
    DType in, out;
    int64_t m, n, k, batch, a_row, d_row, budget;
  };
  const Case cases[] = {
      {DType::BFloat16, DType::BFloat16, 4096, 4096, 4096, 1, 4096, 4096, int64_t{1} << 33},
      {DType::BFloat16, DType::Float32, 4096, 4096, 4096, 1, 4096, 4096, int64_t{1} << 33},
      {DType::Float32, DType::Float32, 1000, 333, 77, 2, 77, 333, 1 << 24},
      {DType::Float64, DType::Float64, 5000, 17, 3, 1, 3, 17, 1 << 12},
      {DType::Float16, DType::Float16, 300, 8, 8, 1, 8, 8, 1 << 20},
      {DType::Float32, DType::Float32, 100, 100, 100, 1, 100, 100, 0},
      {DType::Float32, DType::Float32, 100, 100, 100, 1, 100, 100, int64_t{1} << 40},
      {DType::BFloat16, DType::BFloat16, 8192, 28672, 4096, 1, 4096, 28672, int64_t{1} << 30},
      {DType::Float32, DType::Float32, 513, 1, 1, 1, 1, 1, 64},
  };
  for (const Case& c : cases) {
    GemmProblem p = Dense(c.in, c.m, c.n, c.k);
    p.out = c.out;
    p.batch = c.batch;
    p.a.row = c.a_row;
    p.d_row = c.d_row;
    const int64_t rows = RowBlockRows(p, c.budget);
    EXPECT_EQ(rows, OldRows(c.m, c.n, c.k, c.batch, c.a_row, c.d_row, ItemSize(c.in),
                            ItemSize(c.out), c.budget))
        << c.m << "x" << c.n << "x" << c.k << " budget " << c.budget;
    EXPECT_GE(rows, 1);
    EXPECT_LE(rows, c.m);
    if (rows < c.m) {  // every block start keeps A and D 256-byte aligned
      EXPECT_EQ(rows * c.a_row * ItemSize(c.in) % 256, 0);
      EXPECT_EQ(rows * c.d_row * ItemSize(c.out) % 256, 0);
    }
  }
}

}  // namespace
}  // namespace pygpukit::ops
