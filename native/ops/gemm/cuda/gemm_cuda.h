// Internal: host launchers of the CUDA GEMM kernel families. gemm_route_cuda.cc holds the one
// switch over them (the kGemmProduct slot, which the tuner also times through). The planner has
// checked each family's rules (ops/gemm/gemm_accepts.h) before a launcher runs; a launcher
// returns NotImplementedError only for refusals no rule foresees, never a wrong answer.
#pragma once

#include <algorithm>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/hal/backend.h"
#include "ops/gemm/gemm_family.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/launch/cuda_launch.h"
#include "ops/launch/launch_context.h"
#include "runtime/sched/yield_hook.h"

namespace pygpukit::ops::cuda_kernels {

/// `p` on `choice`'s family (and sm90 configuration).
absl::Status GemmProductCuda(LaunchContext& ctx, const GemmProblem& p, const GemmChoice& choice);

/// Hopper wgmma + TMA kernels (sm_90a): bf16 / fp16 in, fp32 accumulate, same dtype or float32
/// out, operands K-major or MN-major; or float32 in as TF32, float32 out, K-major A and B only.
/// Operands 16-byte aligned, leading dims and batch strides multiples of 16 bytes; any
/// m, n, k >= 1. choice.sm90_bn / sm90_cluster (0: chosen by ops/gemm/gemm_sm90_plan.h) are
/// what the autotuner times.
absl::Status GemmSm90(LaunchContext& ctx, const GemmProblem& p, const GemmChoice& choice);
/// GemmSm90 on the preemptible kernels (16-bit inputs; whole 128 x 256 tiles): while `signal`
/// is set the kernel's CTAs stop within a few k-blocks and save their state; this call then
/// waits with hook.AwaitResume() (which returns once its host copy is clear) and launches again
/// to resume, until the product is done; it also waits before the first launch.
/// Host-synchronous. Returns the number of preemptions; the result differs from an
/// uninterrupted run's by float32 rounding of the partial sums only. UnimplementedError when
/// there is no memory for the preemption state.
absl::StatusOr<int> GemmSm90Preemptible(LaunchContext& ctx, const GemmProblem& p, YieldHook& hook,
                                        const PreemptSignal& signal);
/// mma.sync + ldmatrix + cp.async kernels (SM80 and newer): bf16 / fp16, tf32.
absl::Status GemmSm80(LaunchContext& ctx, const GemmProblem& p);
/// CUDA-core kernels for exact float32 and float64.
absl::Status GemmSimt(LaunchContext& ctx, const GemmProblem& p);
/// cuBLASLt (loaded at run time): plain products of float16 / bfloat16 / float32 / float64 /
/// complex64 / complex128, output in the input dtype or float32 for 16-bit inputs.
absl::Status GemmCublasLt(LaunchContext& ctx, const GemmProblem& p);

}  // namespace pygpukit::ops::cuda_kernels
