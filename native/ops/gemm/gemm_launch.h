// Runs a GEMM problem on the context's device: the only caller of the scheduler's yield hook and
// of the family's kernel slots. The op layer sees OK or a real error, never a decline.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"
#include "ops/launch/launch_context.h"

namespace pygpukit::ops {

/// Runs `p` (its arrays pinned and recorded in `ctx`): the CPU kernel, or on CUDA the
/// preemptible kernels where the running task may be preempted, else the plan (gemm_plan.h),
/// split into row blocks of the task's FLOP budget.
absl::Status LaunchGemm(LaunchContext& ctx, const GemmProblem& p);

/// Runs the grouped product `p` (p.groups groups; every field but group_table and
/// group_tiles_m set) as one launch over every group's tiles on the sm90 kernels; `ends` are
/// the groups' end rows (non-decreasing, the last p.m). NotImplementedError, with nothing
/// launched, where one product per group must run instead: the CPU backend, a family other than
/// sm90 asked for, a task whose launches are paced or preemptible, a device or operand the sm90
/// kernels do not serve.
absl::Status LaunchGroupedGemm(LaunchContext& ctx, GemmProblem p, absl::Span<const int64_t> ends);

/// The context's device as the families' rules see it (arch, sm_90a code, SM partition).
absl::StatusOr<GemmTarget> GemmTargetOf(const LaunchContext& ctx);

}  // namespace pygpukit::ops
