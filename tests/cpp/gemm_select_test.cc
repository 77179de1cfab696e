// The GEMM kernel-family dispatch table (ops/gemm/gemm_select.h): pure logic, so every rule is
// checked here without a GPU, for the targets of interest (SM 7.5, 8.0, 8.6, 8.9, 9.0, 10.0).
#include "ops/gemm/gemm_select.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace pygpukit::ops {
namespace {

constexpr GemmTarget kHopper{9, 0, true};
constexpr GemmTarget kHopperNoSm90a{9, 0, false};
constexpr GemmTarget kAmpere{8, 0, false};
constexpr GemmTarget kAmpereWithSm90a{8, 0, true};  // a fat binary run on an A100
constexpr GemmTarget kAda{8, 9, true};
constexpr GemmTarget kTuring{7, 5, true};
constexpr GemmTarget kBlackwell{10, 0, true};  // sm_90a code does not run on 10.x

constexpr MatmulBackend kForced[] = {MatmulBackend::kCublasLt, MatmulBackend::kSm90,
                                     MatmulBackend::kSm80, MatmulBackend::kSimt};
constexpr GemmFamily kFamilyOfForced[] = {GemmFamily::kCublasLt, GemmFamily::kSm90,
                                          GemmFamily::kSm80, GemmFamily::kSimt};

// A problem's tune key and family fit (what selection reads) in one value.
struct GemmSummary : TuneKey, GemmFit {};

// A summary with every precondition of our kernels met; tests switch single fields off.
GemmSummary Problem(DType in, int64_t m = 1024, bool fused = false) {
  GemmSummary s;
  s.in = in;
  s.out = in;
  s.m = m;
  s.n = 1024;
  s.k = 1024;
  s.fused = fused;
  s.tma_ok = true;
  s.sm80_ok = true;
  return s;
}

GemmSummary Tf32(int64_t m = 1024, bool fused = false) {
  GemmSummary s = Problem(DType::Float32, m, fused);
  s.tf32 = true;
  return s;
}

GemmFamily Auto(const GemmSummary& s, const GemmTarget& t) {
  return SelectGemm(s, s, t, MatmulBackend::kAuto);
}

std::string Describe(const GemmSummary& s, const GemmTarget& t) {
  return std::string(DTypeName(s.in)) + (s.tf32 ? "/tf32" : "") + " m=" + std::to_string(s.m) +
         " fused=" + std::to_string(s.fused) + " tma_ok=" + std::to_string(s.tma_ok) +
         " sm80_ok=" + std::to_string(s.sm80_ok) + " on sm" + std::to_string(t.sm_major) +
         std::to_string(t.sm_minor) + (t.sm90a_built ? " (sm90a built)" : "");
}

TEST(GemmSelect, FamilyNames) {
  EXPECT_EQ(GemmFamilyName(GemmFamily::kSm90), "sm90");
  EXPECT_EQ(GemmFamilyName(GemmFamily::kSm80), "sm80");
  EXPECT_EQ(GemmFamilyName(GemmFamily::kSimt), "simt");
  EXPECT_EQ(GemmFamilyName(GemmFamily::kCublasLt), "cublaslt");
}

TEST(GemmSelect, ForcedBackendsReturnTheirFamilyWhateverTheProblem) {
  // A forced family is returned as is, even where its launcher will refuse the problem
  // (float64 on sm90, a non-Hopper GPU, no sm90a build, layouts it rejects).
  const std::vector<GemmSummary> problems = [] {
    std::vector<GemmSummary> v;
    for (DType d : {DType::BFloat16, DType::Float16, DType::Float32, DType::Float64,
                    DType::Complex64, DType::Complex128}) {
      for (bool fused : {false, true}) {
        for (int64_t m : {1, 64, 65, 4096}) {
          GemmSummary s = Problem(d, m, fused);
          v.push_back(s);
          s.tma_ok = s.sm80_ok = false;
          v.push_back(s);
        }
      }
    }
    v.push_back(Tf32(1024, true));
    return v;
  }();
  for (const GemmTarget& t :
       {kHopper, kHopperNoSm90a, kAmpere, kAda, kTuring, kBlackwell, GemmTarget{}}) {
    for (const GemmSummary& s : problems) {
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(SelectGemm(s, s, t, kForced[i]), kFamilyOfForced[i])
            << GemmFamilyName(kFamilyOfForced[i]) << " forced for " << Describe(s, t);
      }
    }
  }
}

TEST(GemmSelect, PartitionedStreamsKeepLargePlainHalfOnSm90) {
  GemmTarget part = kHopper;
  part.partitioned = true;
  for (DType d : {DType::BFloat16, DType::Float16}) {
    GemmSummary s = Problem(d, 8192);
    s.n = s.k = 8192;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "the whole device: cuBLASLt";
    EXPECT_EQ(Auto(s, part), GemmFamily::kSm90) << "a partition: persistent CTAs";
    s.m = 64;  // the sm90 kernels' lower bound still holds
    EXPECT_EQ(Auto(s, part), GemmFamily::kCublasLt);
    s = Problem(d, 8192);
    s.tma_ok = false;
    EXPECT_EQ(Auto(s, part), GemmFamily::kCublasLt) << "a layout TMA cannot take";
  }
  GemmTarget ampere = kAmpere;
  ampere.partitioned = true;
  EXPECT_EQ(Auto(Problem(DType::BFloat16, 8192), ampere), GemmFamily::kCublasLt);
  EXPECT_EQ(Auto(Problem(DType::Float32, 8192), part), GemmFamily::kCublasLt);
  GemmSummary tf32 = Tf32(8192);
  tf32.n = tf32.k = 8192;
  EXPECT_EQ(Auto(tf32, part), GemmFamily::kCublasLt) << "measured for 16-bit products only";
}

TEST(GemmSelect, HalfOnHopperUsesSm90AboveSixtyFourRows) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    for (bool fused : {false, true}) {
      for (int64_t m : {int64_t{65}, int64_t{128}, int64_t{129}, int64_t{512}, int64_t{1024}}) {
        GemmSummary s = Problem(d, m, fused);
        s.n = 8192;  // enough tiles to fill the GPU
        s.k = 128;
        // (a fused epilogue of fewer than 512 rows: cuBLASLt's)
        const GemmFamily want = fused && m < 512 ? GemmFamily::kCublasLt : GemmFamily::kSm90;
        EXPECT_EQ(Auto(s, kHopper), want) << Describe(s, kHopper);
      }
    }
    // Batch, n and k do not move the choice.
    GemmSummary s = Problem(d, 2048);
    s.batch = 64;
    s.n = 1;
    s.k = 1;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90);
    // float32 output of 16-bit inputs (a "fused" epilogue) stays on sm90 where it leads.
    s = Problem(d, 1024, true);
    s.out = DType::Float32;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90);
  }
}

TEST(GemmSelect, FusedHalfOnHopperTakesSm90OnlyWhereThePlainKernelsLead) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    GemmSummary s = Problem(d, 2048, true);
    s.n = s.k = 2048;  // 2048^3 MACs: measured, cuBLASLt's epilogue ahead
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
    s.out = DType::Float32;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "float32 output counts as fused";
    s = Problem(d, 1024, true);  // 1024^3: the plain sm90 kernels lead
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90);
    s.k = 1544;  // past 1.5 * 1024^3 MACs
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
    s.k = 1024;
    s.batch = 2;  // the batch counts toward the size
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
    EXPECT_EQ(Auto(s, GemmTarget{9, 0, true, true}), GemmFamily::kSm90) << "an SM partition";
    s.fused = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "plain: the same size rule";
    // LLM projections with few rows (measured: cuBLASLt's epilogue 1.0-3.7x at M 16 and 128).
    s = Problem(d, 16, true);
    s.n = 4096;
    s.k = 14336;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "M <= 64";
    s.m = 128;
    s.k = 4096;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "32 tiles, long K";
    s.n = 8192;
    s.k = 1024;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "64 tiles, short K, but 128 rows";
    s.fused = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90) << "plain: the sm90 kernels lead";
  }
  GemmSummary tf32 = Tf32(4096, true);  // TF32 fused keeps its own rule
  tf32.n = tf32.k = 4096;
  EXPECT_EQ(Auto(tf32, kHopper), GemmFamily::kSm90);
}

TEST(GemmSelect, LargePlainHalfOnHopperGoesToCublasLt) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    GemmSummary s = Problem(d, 1024);  // 1024^3: 64 tiles of 128 x 128
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90);
    s.k = 1536;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90) << "1.5 * 1024^3 is the largest plain sm90";
    s.k = 1544;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
    s.k = 1024;
    s.batch = 2;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "batch counts toward the size";
    s.fused = true;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "fused: the same size rule";
    // Few output tiles (a long-K skinny product) leave SMs idle: cuBLASLt splits K.
    s = Problem(d, 128);
    s.n = 4096;
    s.k = 2048;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt) << "32 tiles, long K";
    s.n = 8192;
    s.k = 1024;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90) << "64 tiles";
    s = Problem(d, 512);  // 512^3: 16 tiles but short K
    s.n = s.k = 512;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm90);
  }
}

TEST(GemmSelect, SkinnyHalfOnHopperGoesToCublasLt) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    for (int64_t m : {1, 8, 63, 64}) {
      EXPECT_EQ(Auto(Problem(d, m), kHopper), GemmFamily::kCublasLt) << "m=" << m;
    }
    // A fused epilogue: cuBLASLt (its epilogue, or its product and our pass) where the
    // operands suit TMA (and so cuBLASLt's epilogues), else sm80 where it accepts the layout.
    EXPECT_EQ(Auto(Problem(d, 64, true), kHopper), GemmFamily::kCublasLt);
    GemmSummary s = Problem(d, 64, true);
    s.tma_ok = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm80);
    s.sm80_ok = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);  // the op layer then splits it
  }
}

TEST(GemmSelect, HopperWithoutSm90aBuildOrTmaLayout) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    // No sm_90a code embedded: plain products go to cuBLASLt, fused ones to sm80.
    EXPECT_EQ(Auto(Problem(d), kHopperNoSm90a), GemmFamily::kCublasLt);
    EXPECT_EQ(Auto(Problem(d, 1024, true), kHopperNoSm90a), GemmFamily::kSm80);
    GemmSummary s = Problem(d, 1024, true);
    s.sm80_ok = false;
    EXPECT_EQ(Auto(s, kHopperNoSm90a), GemmFamily::kCublasLt);
    // Layouts TMA cannot take: the same as without the build.
    s = Problem(d);
    s.tma_ok = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
    s.fused = true;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kSm80);
    s.sm80_ok = false;
    EXPECT_EQ(Auto(s, kHopper), GemmFamily::kCublasLt);
  }
}

TEST(GemmSelect, HalfOnAmpereAndAdaFusesOnSm80Only) {
  for (const GemmTarget& t : {kAmpere, kAmpereWithSm90a, kAda, GemmTarget{8, 6, false}}) {
    for (DType d : {DType::BFloat16, DType::Float16}) {
      for (int64_t m : {1, 64, 65, 4096}) {
        EXPECT_EQ(Auto(Problem(d, m), t), GemmFamily::kCublasLt) << Describe(Problem(d, m), t);
        EXPECT_EQ(Auto(Problem(d, m, true), t), GemmFamily::kSm80)
            << Describe(Problem(d, m, true), t);
      }
      GemmSummary s = Problem(d, 4096, true);
      s.sm80_ok = false;
      EXPECT_EQ(Auto(s, t), GemmFamily::kCublasLt) << Describe(s, t);
    }
  }
}

TEST(GemmSelect, HalfOnOtherArchs) {
  for (DType d : {DType::BFloat16, DType::Float16}) {
    // Pre-Ampere: no tensor-core family of ours.
    EXPECT_EQ(Auto(Problem(d), kTuring), GemmFamily::kCublasLt);
    EXPECT_EQ(Auto(Problem(d, 4096, true), kTuring), GemmFamily::kCublasLt);
    // Blackwell: never the sm_90a kernels; mma.sync for fused epilogues.
    EXPECT_EQ(Auto(Problem(d), kBlackwell), GemmFamily::kCublasLt);
    EXPECT_EQ(Auto(Problem(d, 4096, true), kBlackwell), GemmFamily::kSm80);
  }
}

TEST(GemmSelect, Float32) {
  for (const GemmTarget& t : {kHopper, kHopperNoSm90a, kAmpere, kAda, kTuring, kBlackwell}) {
    // Plain products: cuBLASLt, exact or TF32 (TF32 with K-major operands on Hopper: below).
    EXPECT_EQ(Auto(Problem(DType::Float32), t), GemmFamily::kCublasLt) << Describe(Tf32(), t);
    GemmSummary nmajor = Tf32();
    nmajor.tma_ok = false;
    EXPECT_EQ(Auto(nmajor, t), GemmFamily::kCublasLt) << Describe(nmajor, t);
    // Exact fused epilogues: SIMT on every arch, whatever the layout flags say.
    for (int64_t m : {1, 64, 65, 4096}) {
      GemmSummary s = Problem(DType::Float32, m, true);
      EXPECT_EQ(Auto(s, t), GemmFamily::kSimt) << Describe(s, t);
      s.tma_ok = s.sm80_ok = false;
      EXPECT_EQ(Auto(s, t), GemmFamily::kSimt) << Describe(s, t);
    }
  }
  // Plain TF32 with K-major operands on Hopper: the 16-bit size rules (sm90 up to 1.5 * 1024^3
  // MACs, cuBLASLt above and for M <= 64).
  EXPECT_EQ(Auto(Tf32(), kHopper), GemmFamily::kSm90);
  EXPECT_EQ(Auto(Tf32(64), kHopper), GemmFamily::kCublasLt);
  GemmSummary big = Tf32(4096);
  big.n = big.k = 4096;
  EXPECT_EQ(Auto(big, kHopper), GemmFamily::kCublasLt);
  EXPECT_EQ(Auto(Tf32(), kHopperNoSm90a), GemmFamily::kCublasLt);
  // TF32 fused epilogues: sm90 on Hopper when both operands are K-major (tma_ok) and M > 64,
  // else sm80 from SM 8.0 on, where the layout suits it.
  EXPECT_EQ(Auto(Tf32(1024, true), kHopper), GemmFamily::kSm90);
  for (const GemmTarget& t : {kHopper, kHopperNoSm90a, kAmpere, kAda, kBlackwell}) {
    GemmSummary s = Tf32(1024, true);
    s.tma_ok = false;
    EXPECT_EQ(Auto(s, t), GemmFamily::kSm80) << Describe(s, t);
    if (!(t.sm_major == 9 && t.sm90a_built)) {
      EXPECT_EQ(Auto(Tf32(1024, true), t), GemmFamily::kSm80) << Describe(Tf32(1024, true), t);
    }
    EXPECT_EQ(Auto(Tf32(1, true), t), GemmFamily::kSm80) << Describe(Tf32(1, true), t);
    s.sm80_ok = false;
    EXPECT_EQ(Auto(s, t), GemmFamily::kCublasLt) << Describe(s, t);
  }
  EXPECT_EQ(Auto(Tf32(1024, true), kTuring), GemmFamily::kCublasLt);
}

TEST(GemmSelect, Float64) {
  for (const GemmTarget& t : {kHopper, kAmpere, kTuring, kBlackwell}) {
    EXPECT_EQ(Auto(Problem(DType::Float64), t), GemmFamily::kCublasLt)
        << Describe(Problem(DType::Float64), t);
    for (int64_t m : {1, 65, 4096}) {
      EXPECT_EQ(Auto(Problem(DType::Float64, m, true), t), GemmFamily::kSimt)
          << Describe(Problem(DType::Float64, m, true), t);
    }
  }
}

TEST(GemmSelect, ComplexAlwaysCublasLt) {
  for (const GemmTarget& t : {kHopper, kAmpere, kTuring, kBlackwell}) {
    for (DType d : {DType::Complex64, DType::Complex128}) {
      for (bool fused : {false, true}) {
        EXPECT_EQ(Auto(Problem(d, 4096, fused), t), GemmFamily::kCublasLt)
            << Describe(Problem(d, 4096, fused), t);
      }
    }
  }
}

// Invariants of auto selection over a grid of problems and targets: each family of ours is
// picked only where its kernels exist and accept the problem, and plain products never pay for
// an epilogue-capable kernel where cuBLASLt is the measured winner.
TEST(GemmSelect, AutoNeverPicksAFamilyOutsideItsPreconditions) {
  std::set<GemmFamily> seen;
  for (const GemmTarget& t : {kHopper, kHopperNoSm90a, kAmpere, kAmpereWithSm90a, kAda, kTuring,
                              kBlackwell, GemmTarget{}}) {
    for (DType d : {DType::BFloat16, DType::Float16, DType::Float32, DType::Float64,
                    DType::Complex64, DType::Complex128}) {
      for (bool tf32 : {false, true}) {
        if (tf32 && d != DType::Float32) continue;
        for (bool fused : {false, true}) {
          for (bool tma_ok : {false, true}) {
            for (bool sm80_ok : {false, true}) {
              for (int64_t m : {1, 64, 65, 1000}) {
                GemmSummary s = Problem(d, m, fused);
                s.tf32 = tf32;
                s.tma_ok = tma_ok;
                s.sm80_ok = sm80_ok;
                const GemmFamily f = Auto(s, t);
                seen.insert(f);
                const bool half = d == DType::BFloat16 || d == DType::Float16;
                const std::string what = Describe(s, t);
                switch (f) {
                  case GemmFamily::kSm90:
                    EXPECT_TRUE((half || tf32) && t.sm_major == 9 && t.sm90a_built && tma_ok)
                        << what;
                    EXPECT_TRUE(m > 64 || (fused && half)) << what;
                    // a fused 16-bit product leaves cuBLASLt only where sm90 leads (M >= 512)
                    EXPECT_TRUE(!(fused && half) || m >= 512) << what;
                    break;
                  case GemmFamily::kSm80:
                    EXPECT_TRUE(fused && sm80_ok && t.sm_major >= 8) << what;
                    EXPECT_TRUE(half || tf32) << what;
                    break;
                  case GemmFamily::kSimt:
                    EXPECT_TRUE(fused && !tf32) << what;
                    EXPECT_TRUE(d == DType::Float32 || d == DType::Float64) << what;
                    break;
                  case GemmFamily::kCublasLt:
                    // Only where none of ours is the rule's pick.
                    EXPECT_FALSE(fused && !tf32 && (d == DType::Float32 || d == DType::Float64))
                        << what;
                    // (a fused Hopper product of 1000 x 1024 x 1024 is where the sm90 kernels
                    // lead, so not cuBLASLt's)
                    EXPECT_FALSE(half && t.sm_major == 9 && t.sm90a_built && tma_ok && m >= 512 &&
                                 fused)
                        << what;
                    // (fused 16-bit products with TMA-friendly operands on Hopper go to
                    // cuBLASLt's epilogues where the sm90 kernels do not lead)
                    EXPECT_FALSE(fused && sm80_ok && t.sm_major >= 8 && (half || tf32) &&
                                 !(half && t.sm_major == 9 && t.sm90a_built && tma_ok))
                        << what;
                    EXPECT_FALSE(fused && tf32 && t.sm_major == 9 && t.sm90a_built && tma_ok &&
                                 m > 64)
                        << what;
                    break;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), 4u);  // the grid reaches every family
}

}  // namespace
}  // namespace pygpukit::ops
