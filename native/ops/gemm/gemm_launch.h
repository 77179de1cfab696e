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

/// The context's device as the families' rules see it (arch, sm_90a code, SM partition).
absl::StatusOr<GemmTarget> GemmTargetOf(const LaunchContext& ctx);

}  // namespace pygpukit::ops
