// How a CUDA product runs, decided once before anything is launched: which family, and whether
// it fuses the epilogue or runs the plain product into a float32 / float64 temporary followed by
// one epilogue pass. Pure except for the chooser (the tuner or the rules), so the decisions are
// tested without a GPU (tests/cpp/gemm_plan_test.cc). gemm_launch.cc carries the plan out.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/gemm/gemm_accepts.h"
#include "ops/gemm/gemm_family.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"

namespace pygpukit::ops {

struct GemmPlan {
  /// The product applies the epilogue. Otherwise the plain product of the problem goes into a
  /// temporary of GemmAccumulator's dtype and one pass applies the epilogue over it.
  bool fused = true;
  /// k == 0 with an epilogue: the temporary is zeros and no product runs.
  bool zero_product = false;
  /// The family of the product that runs (the problem's, or its plain product's).
  GemmChoice choice;
};

/// A family for a problem (the tuner's or the rules' pick), or none when no family serves it.
using GemmChooser = absl::FunctionRef<std::optional<GemmChoice>(const GemmProblem&)>;

/// The dtype of an unfused product's temporary: float64 for float64 outputs, else float32.
DType GemmAccumulator(const GemmProblem& p);

/// The rules' pick for `p` on `t` (SelectGemm) if it serves `p`, else cuBLASLt if it does,
/// else none.
std::optional<GemmChoice> RuleChoice(const GemmProblem& p, const GemmTarget& t);

/// The plan for `p` on a CUDA device `t`. A forced family (p.options.backend) that cannot
/// serve `p` is NotImplementedError with its reason, except cuBLASLt, which serves an epilogue
/// unfused. Auto mode fuses with `choose(p)` when it gives a family, else runs unfused.
absl::StatusOr<GemmPlan> PlanGemm(const GemmProblem& p, const GemmTarget& t, GemmChooser choose);

/// Auto mode's choice for a grouped product (groups ending at rows `ends`, each against its own
/// k x n matrix): one launch over every group's tiles when a loop of one product per group would
/// be bound by its launches, i.e. when the mean non-empty group's product, modelled at a Hopper
/// GPU's rates (16-bit tensor-core FLOPs, its B read from memory), is short in both. Measured in
/// benchmarks/results/*-grouped-matmul.json.
bool GroupedOneLaunchPays(absl::Span<const int64_t> ends, int64_t k, int64_t n, int elem_bytes);

/// Rows per launch when a task's launches are limited to `max_flops` (0: no limit): at most
/// the budget, at least one row, and a multiple of the rows after which A's and D's row starts
/// are 256-byte aligned again (what cuBLASLt assumes), of 128 rows where that many fit (full
/// GEMM tiles; a multiple of 4 rows for a per-row scale of A). p.m when the whole product fits,
/// and for block-scaled products.
int64_t RowBlockRows(const GemmProblem& p, int64_t max_flops);

}  // namespace pygpukit::ops
