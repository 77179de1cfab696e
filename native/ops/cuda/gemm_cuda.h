// Internal: host launchers of the CUDA GEMM kernel families. ops/cuda/matmul_cuda.cc picks a
// family (ops/gemm_select.h) and calls one of these; each checks its own preconditions and
// returns NotImplementedError when the problem is outside them, never a wrong answer.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/hal/backend.h"
#include "ops/kernels/gemm_params.h"
#include "runtime/dispatcher.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::ops::cuda_kernels {

/// One GEMM for a CUDA kernel family: the parameter block plus what the kernel symbol depends on.
struct GemmLaunch {
  DType in;           // dtype of A and B
  DType out;          // dtype of D, C and bias (== in, or float32 for 16-bit inputs)
  bool tf32 = false;  // float32 inputs may run as TF32 on tensor cores
  kernels::GemmParams params;
  // sm90 tile width (128 or 256), cluster size (1 or 2) and K splits (1 = none); 0 lets
  // GemmSm90 choose (ops/gemm_sm90_plan.h). The autotuner sets them to time each configuration.
  int sm90_bn = 0, sm90_cluster = 0, sm90_splits = 0;
  LaunchCost cost;  // declared to the profiler (MatmulCost)
};

/// SMs a GEMM launched on `s` can count on: the stream's partition, else the whole device. The
/// persistent grids are sized by it, so a partitioned stream gets no second, partial wave.
inline int StreamSms(const hal::Stream& s, const hal::DeviceProperties& props) {
  return s.sm_count() > 0 ? s.sm_count() : std::max(1, props.multiprocessors);
}

/// Hopper wgmma + TMA kernels (sm_90a): bf16 / fp16 in, fp32 accumulate, same dtype or float32
/// out, operands K-major or MN-major; or float32 in as TF32 (g.tf32), float32 out, K-major A and
/// B only. Operands 16-byte aligned, leading dims and batch strides multiples of 16 bytes; any
/// m, n, k >= 1.
absl::Status GemmSm90(hal::Stream& s, const GemmLaunch& g);
/// GemmSm90 on the preemptible kernels (16-bit inputs; whole 128 x 256 tiles): while `signal`
/// is set the kernel's CTAs stop within a few k-blocks and save their state; this call then
/// waits with `await_resume` (which returns once its host copy is clear) and launches again to
/// resume, until the product is done; it also waits before the first launch. Host-synchronous.
/// Returns the number of preemptions; the result differs from an uninterrupted run's by float32
/// rounding of the partial sums only.
/// NotImplementedError where these kernels cannot serve `g`.
absl::StatusOr<int> GemmSm90Preemptible(hal::Stream& s, const GemmLaunch& g,
                                        const PreemptSignal& signal,
                                        const std::function<void()>& await_resume);
/// Whether GemmSm90 accepts `g`'s dtypes, layouts and alignment (the device aside).
bool Sm90Accepts(const GemmLaunch& g);
/// Whether this build embeds sm_90a code (else the sm90 kernels are empty stubs).
bool Sm90KernelsBuilt();
/// mma.sync + ldmatrix + cp.async kernels (SM80 and newer): bf16 / fp16, tf32.
absl::Status GemmSm80(hal::Stream& s, const GemmLaunch& g);
/// CUDA-core kernels for exact float32 and float64.
absl::Status GemmSimt(hal::Stream& s, const GemmLaunch& g);

}  // namespace pygpukit::ops::cuda_kernels
