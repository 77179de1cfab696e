// The GEMM family's kernel entry points (ops/launch/kernel_slot.h), implemented in cpu/ and
// cuda/ and reached through the slots by gemm_launch.cc only.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/gemm/gemm_family.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"
#include "ops/launch/kernel_slot.h"
#include "runtime/sched/yield_hook.h"

namespace pygpukit::ops {

/// The product `p` with its epilogue, on `choice`'s family (the CPU backend has one kernel and
/// ignores it). UnimplementedError only for refusals no rule foresaw (a tensor map TMA cannot
/// encode, no cuBLASLt algorithm).
inline constinit KernelSlot<absl::Status(LaunchContext&, const GemmProblem&, const GemmChoice&)>
    kGemmProduct{"gemm"};

/// The unfused epilogue pass: `p`'s output = its epilogue applied to `product`'s output (the
/// plain product of `p`, float32 or float64, with its own strides).
inline constinit KernelSlot<absl::Status(LaunchContext&, const GemmProblem& p,
                                         const GemmProblem& product)>
    kGemmEpilogue{"gemm epilogue"};

/// `p` on the preemptible sm90 kernels (GemmPreemptibleAccepts): host-synchronous; stops while
/// `signal` is set, waits with hook.AwaitResume() and resumes until done. Returns the times it
/// was preempted; UnimplementedError when there is no memory for the preemption state.
inline constinit KernelSlot<absl::StatusOr<int>(LaunchContext&, const GemmProblem&, YieldHook&,
                                                const PreemptSignal&)>
    kGemmPreemptible{"preemptible gemm"};

/// The autotuner (ops/gemm/gemm_tune.h): the cached choice for `p`'s tune key, timing the
/// candidates on a miss; none when there is nothing to choose or no candidate served it.
inline constinit KernelSlot<absl::StatusOr<std::optional<GemmChoice>>(
    LaunchContext&, const GemmProblem&, const GemmTarget&)>
    kGemmTuned{"gemm autotuner"};

}  // namespace pygpukit::ops
