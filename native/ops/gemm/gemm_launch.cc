#include "ops/gemm/gemm_launch.h"

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/gemm_kernels.h"
#include "ops/gemm/gemm_plan.h"
#include "ops/gemm/gemm_tune.h"
#include "ops/ops.h"
#include "runtime/embedded_kernels.h"
#include "runtime/runtime.h"
#include "runtime/sched/yield_hook.h"

namespace pygpukit::ops {
namespace {

// A product `refused` refused at launch (a tensor map TMA cannot encode, no cuBLASLt algorithm
// for an epilogue): cuBLASLt serves it, fused if it can, else as its plain product into a
// temporary plus the epilogue pass.
absl::Status RunRefused(LaunchContext& ctx, const GemmProblem& p, const GemmTarget& t,
                        GemmFamily refused) {
  const GemmChoice lt{GemmFamily::kCublasLt};
  if (refused != GemmFamily::kCublasLt && GemmAccepts(GemmFamily::kCublasLt, p, t).ok()) {
    absl::Status st = kGemmProduct(ctx, p, lt);
    if (!absl::IsUnimplemented(st) || p.plain()) return st;
  }
  if (p.plain()) {
    return NotImplementedError(absl::StrCat("matmul: no kernel family serves ", DTypeName(p.in),
                                            " (", p.m, "x", p.k, ") @ (", p.k, "x", p.n, ")"));
  }
  const DType acc = GemmAccumulator(p);
  PGK_ASSIGN_OR_RETURN(GPUArray tmp, Empty({p.batch, p.m, p.n}, acc, ctx.device()));
  PGK_RETURN_IF_ERROR(ctx.Use(tmp));
  const GemmProblem product = PlainInto(p, tmp.data(), acc);
  PGK_RETURN_IF_ERROR(kGemmProduct(ctx, product, lt));
  return kGemmEpilogue(ctx, p, product);
}

// `p` in row blocks of `rows` with `choice` (a block re-selected by the rules when it is a
// proper slice, as its size may call for another family).
absl::Status RunBlocks(LaunchContext& ctx, const GemmProblem& p, const GemmChoice& choice,
                       int64_t rows, const GemmTarget& t) {
  for (int64_t r0 = 0; r0 < p.m; r0 += rows) {
    const bool sliced = rows < p.m;
    const GemmProblem q = sliced ? RowSlice(p, r0, std::min(rows, p.m - r0)) : p;
    GemmChoice c = choice;
    if (sliced && p.options.backend == MatmulBackend::kAuto) c = RuleChoice(q, t).value_or(choice);
    absl::Status st = kGemmProduct(ctx, q, c);
    // In auto mode any refusal falls back; a forced cuBLASLt may still run its epilogue apart.
    const bool fall_back = p.options.backend == MatmulBackend::kAuto ||
                           (p.options.backend == MatmulBackend::kCublasLt && !q.plain());
    if (absl::IsUnimplemented(st) && fall_back) st = RunRefused(ctx, q, t, c.family);
    PGK_RETURN_IF_ERROR(st);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GemmTarget> GemmTargetOf(const LaunchContext& ctx) {
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(ctx.device()));
  GemmTarget t;
  t.sm_major = props.sm_major;
  t.sm_minor = props.sm_minor;
  t.sm90a_built = absl::StrContains(EmbeddedKernelArchs(), "90a");
  t.partitioned = ctx.stream().sm_count() > 0;
  return t;
}

absl::Status LaunchGroupedGemm(LaunchContext& ctx, GemmProblem p, absl::Span<const int64_t> ends) {
  if (ctx.backend() == BackendKind::kCpu) {
    return NotImplementedError("grouped_matmul: the CPU backend runs one product per group");
  }
  if (p.options.backend != MatmulBackend::kAuto && p.options.backend != MatmulBackend::kSm90) {
    return NotImplementedError("grouped_matmul: the family asked for runs one product per group");
  }
  // A paced task's products are split to its budget and a preemptible one runs on the _p
  // kernels: both work per product.
  if (YieldHook* yield = CurrentYield(); yield != nullptr) {
    if (yield->preempt_signal(ctx.device()) != nullptr ||
        RowBlockRows(p, yield->max_launch_flops()) < p.m) {
      return NotImplementedError("grouped_matmul: a paced task runs one product per group");
    }
  }
  if (p.options.backend == MatmulBackend::kAuto &&
      !GroupedOneLaunchPays(ends, p.k, p.n, ItemSize(p.in))) {
    return NotImplementedError("grouped_matmul: one product per group is expected faster");
  }
  // An M-major A is read with its rows as TMA's innermost dim, whose box starts must lie on
  // 16-byte boundaries (an unaligned start raised CUDA_ERROR_ILLEGAL_INSTRUCTION on an H200):
  // each group's first row must be such a start.
  if (p.a.col != 1) {
    const int64_t align = 16 / ItemSize(p.in);
    int64_t begin = 0;
    for (const int64_t e : ends) {
      if (e > begin && begin % align != 0) {
        return NotImplementedError(absl::StrCat(
            "grouped_matmul: one launch reads an M-major a from group starts on 16-byte "
            "boundaries; a group starts at row ",
            begin));
      }
      begin = e;
    }
  }
  // The device table (kernels::GroupedTableSize): each group's first 128-row tile row, then its
  // first row.
  const int64_t groups = static_cast<int64_t>(ends.size());
  std::vector<int64_t> table(static_cast<size_t>(kernels::GroupedTableSize(groups)));
  int64_t tile_rows = 0, begin = 0;
  for (int64_t g = 0; g < groups; ++g) {
    table[g] = tile_rows;
    table[groups + 1 + g] = begin;
    tile_rows += (ends[g] - begin + 127) / 128;
    begin = ends[g];
  }
  table[groups] = tile_rows;
  table[2 * groups + 1] = begin;
  p.groups = groups;
  p.group_tiles_m = tile_rows;
  PGK_ASSIGN_OR_RETURN(GemmTarget t, GemmTargetOf(ctx));
  PGK_RETURN_IF_ERROR(GemmAccepts(GemmFamily::kSm90, p, t));
  // Not blocking: the pageable table is staged before FromHost returns, and the copy is ordered
  // before the kernel, so the host does not wait for the GPU here.
  PGK_ASSIGN_OR_RETURN(GPUArray dev_table,
                       FromHost(table.data(), {static_cast<int64_t>(table.size())}, DType::Int64,
                                ctx.device(), /*blocking=*/false));
  PGK_RETURN_IF_ERROR(ctx.Use(dev_table));
  p.group_table = static_cast<const int64_t*>(dev_table.data());
  return kGemmProduct(ctx, p, GemmChoice{GemmFamily::kSm90});
}

absl::Status LaunchGemm(LaunchContext& ctx, const GemmProblem& p) {
  YieldHook* yield = CurrentYield();
  const int64_t budget = yield != nullptr ? yield->max_launch_flops() : 0;
  if (ctx.backend() == BackendKind::kCpu) {  // one kernel, which fuses everything (k == 0 too)
    const int64_t rows = RowBlockRows(p, budget);
    for (int64_t r0 = 0; r0 < p.m; r0 += rows) {
      const GemmProblem q = rows < p.m ? RowSlice(p, r0, std::min(rows, p.m - r0)) : p;
      PGK_RETURN_IF_ERROR(kGemmProduct(ctx, q, GemmChoice{}));
    }
    return absl::OkStatus();
  }
  PGK_ASSIGN_OR_RETURN(GemmTarget t, GemmTargetOf(ctx));
  // A task whose work yields to more urgent work runs its product on preemptible kernels where
  // they serve it: they leave the SMs within microseconds when asked, so no splitting is needed.
  if (const PreemptSignal* signal =
          yield != nullptr ? yield->preempt_signal(ctx.device()) : nullptr;
      signal != nullptr && GemmPreemptibleAccepts(p, t)) {
    absl::StatusOr<int> preempted = kGemmPreemptible(ctx, p, *yield, *signal);
    if (preempted.ok()) {
      yield->Preempted(*preempted);
      return absl::OkStatus();
    }
    if (!absl::IsUnimplemented(preempted.status())) return preempted.status();
  }
  // Otherwise a paced task's product is split into row blocks of at most its FLOP budget, so
  // that more urgent work queued meanwhile waits for one block rather than the whole product.
  const int64_t rows = RowBlockRows(p, budget);
  // Tuned choices are the whole device's and the whole product's: a partitioned stream or a
  // split product follows the rules.
  const bool tune = p.options.backend == MatmulBackend::kAuto && rows == p.m && !t.partitioned &&
                    GemmAutotuneEnabled() && kGemmTuned.has(ctx.backend());
  auto choose = [&](const GemmProblem& q) -> std::optional<GemmChoice> {
    if (tune) {
      absl::StatusOr<std::optional<GemmChoice>> c = kGemmTuned(ctx, q, t);
      if (c.ok() && c->has_value() && GemmAccepts((*c)->family, q, t).ok()) return **c;
    }
    return RuleChoice(q, t);
  };
  PGK_ASSIGN_OR_RETURN(GemmPlan plan, PlanGemm(p, t, choose));
  if (plan.fused) return RunBlocks(ctx, p, plan.choice, rows, t);

  const DType acc = GemmAccumulator(p);
  PGK_ASSIGN_OR_RETURN(GPUArray tmp, plan.zero_product
                                         ? Zeros({p.batch, p.m, p.n}, acc, ctx.device())
                                         : Empty({p.batch, p.m, p.n}, acc, ctx.device()));
  PGK_RETURN_IF_ERROR(ctx.Use(tmp));
  const GemmProblem product = PlainInto(p, tmp.data(), acc);
  if (!plan.zero_product) {
    PGK_RETURN_IF_ERROR(RunBlocks(ctx, product, plan.choice, RowBlockRows(product, budget), t));
  }
  return kGemmEpilogue(ctx, p, product);
}

}  // namespace pygpukit::ops
