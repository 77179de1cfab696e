// Internal: the GEMM autotuner of the CUDA backend, registered as the kGemmTuned slot; the
// executor (ops/gemm/gemm_launch.cc) asks it for auto-mode products while autotuning is on
// (ops/gemm/gemm_tune.h). The cache it fills is ops/gemm/gemm_tune_cache.h.
#pragma once

#include <vector>

#include "core/hal/backend.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"

namespace pygpukit::ops::cuda_kernels {

/// The configurations worth timing for `p` on a device of `props` (target `t`), in order of
/// preference on equal times: sm90 (three tile / cluster shapes) on SM 9.x with sm_90a kernels
/// built, sm80 for 16-bit and TF32 inputs, simt for exact float32 / float64, cuBLASLt where its
/// epilogues serve the problem (plain products included). Each may still decline the problem when
/// launched.
std::vector<GemmChoice> TuneCandidates(const GemmProblem& p, const GemmTarget& t,
                                       const hal::DeviceProperties& props);

}  // namespace pygpukit::ops::cuda_kernels
