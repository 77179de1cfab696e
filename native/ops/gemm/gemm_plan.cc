#include "ops/gemm/gemm_plan.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace pygpukit::ops {
DType GemmAccumulator(const GemmProblem& p) {
  return p.out == DType::Float64 ? DType::Float64 : DType::Float32;
}

std::optional<GemmChoice> RuleChoice(const GemmProblem& p, const GemmTarget& t) {
  // sm80_ok stays true: the table was measured that way, and sm80's own rules are checked below.
  const GemmFit fit{GemmAccepts(GemmFamily::kSm90, p, t).ok(), true};
  const GemmFamily f = SelectGemm(TuneKeyOf(p), fit, t, MatmulBackend::kAuto);
  if (GemmAccepts(f, p, t).ok()) return GemmChoice{f};
  if (f != GemmFamily::kCublasLt && GemmAccepts(GemmFamily::kCublasLt, p, t).ok()) {
    return GemmChoice{GemmFamily::kCublasLt};
  }
  return std::nullopt;
}

absl::StatusOr<GemmPlan> PlanGemm(const GemmProblem& p, const GemmTarget& t, GemmChooser choose) {
  GemmPlan plan;
  if (p.k == 0) {  // nothing to multiply: the epilogue over zeros
    plan.fused = false;
    plan.zero_product = true;
    return plan;
  }
  const GemmProblem plain = PlainInto(p, nullptr, GemmAccumulator(p));
  if (p.options.backend != MatmulBackend::kAuto) {
    const GemmFamily f = *ForcedFamily(p.options.backend);
    absl::Status st = GemmAccepts(f, p, t);
    if (st.ok()) {
      plan.choice = GemmChoice{f};
      return plan;
    }
    // cuBLASLt computes the product; the epilogue it does not fuse runs as a second pass.
    if (f == GemmFamily::kCublasLt && !p.plain() && GemmAccepts(f, plain, t).ok()) {
      plan.fused = false;
      plan.choice = GemmChoice{f};
      return plan;
    }
    return st;
  }
  if (std::optional<GemmChoice> c = choose(p)) {
    plan.choice = *c;
    return plan;
  }
  plan.fused = false;
  plan.choice = choose(plain).value_or(GemmChoice{GemmFamily::kCublasLt});
  return plan;
}

bool GroupedOneLaunchPays(absl::Span<const int64_t> ends, int64_t k, int64_t n, int elem_bytes) {
  // Rates of an H200 for 16-bit products (cuBLASLt's large-product rate, HBM's copy rate), and
  // the spans below which the loop lost to one launch (benchmarks/grouped_matmul.py): a group's
  // compute under about 10 us (Qwen-MoE-like experts: 4-6x; DeepSeek-V3 down at 12.5 us: the
  // loop 1.04x), its B read under about 25 us (DeepSeek-V3 decode at 17 us: one launch 1.36x;
  // Mixtral decode at 34 us: the loop 1.14x).
  constexpr double kFlops = 600e12, kBytes = 3.5e12, kComputeBound = 10e-6, kReadBound = 25e-6;
  int64_t prev = 0, groups = 0, rows = 0;
  for (const int64_t e : ends) {
    if (e > prev) {
      ++groups;
      rows += e - prev;
    }
    prev = e;
  }
  if (groups <= 1) return false;  // nothing to gain over one product
  const double mean_rows = static_cast<double>(rows) / static_cast<double>(groups);
  const double flops = 2.0 * mean_rows * static_cast<double>(k) * static_cast<double>(n);
  const double bytes = static_cast<double>(elem_bytes) * static_cast<double>(k) *
                       (static_cast<double>(n) + mean_rows);
  return flops / kFlops < kComputeBound && bytes / kBytes < kReadBound;
}

int64_t RowBlockRows(const GemmProblem& p, int64_t max_flops) {
  const int64_t per_row = 2 * p.batch * p.n * p.k;
  if (max_flops <= 0 || per_row <= 0 || p.m <= max_flops / per_row) return p.m;
  // Block scales are laid out for the whole product (cuBLASLt's order): not split.
  const auto blocks = [](GemmScaleMode m) {
    return m == GemmScaleMode::kBlocks1x128 || m == GemmScaleMode::kBlocks128x128;
  };
  if (p.scaled() && (blocks(p.scale_a.mode) || blocks(p.scale_b.mode))) return p.m;
  int64_t rows = std::max<int64_t>(1, max_flops / per_row);
  // A multiple of the rows after which both A's and D's offsets are 256-byte aligned; at least
  // 128 rows when that many fit.
  auto period = [](int64_t row_bytes) {
    const int64_t bytes = std::abs(row_bytes);
    return bytes == 0 ? int64_t{1} : 256 / std::gcd(int64_t{256}, bytes);
  };
  const int64_t pa = period(p.a.row * ItemSize(p.in)), pd = period(p.d_row * ItemSize(p.out));
  int64_t align = pa / std::gcd(pa, pd) * pd;
  // A per-row scale of A starts at the block's first row: keep it 16-byte aligned too.
  if (p.scaled() && p.scale_a.mode == GemmScaleMode::kOuter) {
    align = align / std::gcd(align, int64_t{4}) * 4;
  }
  if (rows >= 128) align = align / std::gcd(align, int64_t{128}) * 128;
  return std::max(align, rows - rows % align);
}

}  // namespace pygpukit::ops
