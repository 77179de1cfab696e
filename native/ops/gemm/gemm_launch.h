// Runs a GEMM problem on the context's device: the only caller of the scheduler's yield hook and
// of the family's kernel slots. The op layer sees OK or a real error, never a decline.
#pragma once

#include "absl/status/status.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/launch/launch_context.h"

namespace pygpukit::ops {

/// Runs `p` (its arrays pinned and recorded in `ctx`): the CPU kernel, or on CUDA the
/// preemptible kernels where the running task may be preempted, else the plan (gemm_plan.h),
/// split into row blocks of the task's FLOP budget.
absl::Status LaunchGemm(LaunchContext& ctx, const GemmProblem& p);

}  // namespace pygpukit::ops
