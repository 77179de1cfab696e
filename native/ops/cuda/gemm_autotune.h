// Internal: the GEMM autotuner of the CUDA backend. cuda_kernels::Matmul calls it for auto-mode
// problems while autotuning is on (ops/gemm_tune.h); the cache it fills is
// ops/gemm_tune_cache.h.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/hal/backend.h"
#include "ops/cuda/gemm_cuda.h"
#include "ops/gemm_tune_cache.h"
#include "ops/kernel_launch.h"

namespace pygpukit::ops::cuda_kernels {

/// The tune key of `p` (whose kernel launch block is `g`).
TuneKey TuneKeyOf(const MatmulProblem& p, const GemmLaunch& g);

/// The configurations worth timing for `p` on a device of `props`, in order of preference on
/// equal times: sm90 (three tile / cluster shapes) on SM 9.x with sm_90a kernels built, sm80
/// for 16-bit and TF32 inputs, simt for exact float32 / float64, cuBLASLt for plain products.
/// Each may still decline the problem when launched.
std::vector<TuneChoice> TuneCandidates(const MatmulProblem& p, const GemmLaunch& g,
                                       const hal::DeviceProperties& props);

/// Launches `p` with `choice`'s family (and sm90 configuration).
absl::Status LaunchTuneChoice(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                              const TuneChoice& choice, Device device);

/// Runs `p` with the cached choice for its key, timing the candidates first on a miss (on `s`,
/// into a scratch output, never `p`'s). Returns false, having launched nothing of `p`, when
/// there is nothing to choose (fewer than two candidates), no candidate served the problem,
/// scratch memory was short, or the cached choice declines this problem: the caller then
/// selects by rules. Cache and timing failures never surface; a failed launch of the choice on
/// the real operands does.
absl::StatusOr<bool> MatmulAutotuned(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                                     Device device, const hal::DeviceProperties& props);

}  // namespace pygpukit::ops::cuda_kernels
