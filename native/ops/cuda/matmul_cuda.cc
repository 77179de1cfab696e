// CUDA matmul entry: summarizes the problem, asks ops/gemm_select.h for a kernel family and
// launches it. In auto mode a family that declines the problem (NotImplementedError from its
// launcher) hands plain products to cuBLASLt; fused epilogues then go back to the op layer,
// which runs the product and the epilogue as two launches. With autotuning on (ops/gemm_tune.h)
// auto mode first asks the tuner, and the rules serve only what it leaves.
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_backend.h"
#include "core/status.h"
#include "ops/cuda/gemm_autotune.h"
#include "ops/cuda/gemm_cuda.h"
#include "ops/gemm_select.h"
#include "ops/gemm_tune.h"
#include "ops/kernel_launch.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {

absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, Device device) {
  GemmLaunch g{p.dtype,
               p.epilogue.out,
               p.dtype == DType::Float32 && p.options.precision == MatmulPrecision::kTF32,
               GemmParamsOf(p),
               /*sm90_bn=*/0,
               /*sm90_cluster=*/0,
               /*sm90_splits=*/0,
               MatmulCost(p)};
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props,
                       Runtime::Get().cuda_backend()->properties(device.index));
  // Tuned choices are the whole device's; a partitioned stream follows the selection rules.
  if (p.options.backend == MatmulBackend::kAuto && GemmAutotuneEnabled() && s.sm_count() == 0) {
    PGK_ASSIGN_OR_RETURN(bool ran, MatmulAutotuned(s, p, g, device, props));
    if (ran) return absl::OkStatus();
  }
  GemmSummary sum;
  sum.in = p.dtype;
  sum.out = p.epilogue.out;
  sum.tf32 = g.tf32;
  sum.m = p.m;
  sum.n = p.n;
  sum.k = p.k;
  sum.batch = p.batch;
  sum.fused = !p.epilogue.trivial() || p.epilogue.out != p.dtype;
  sum.tma_ok = Sm90Accepts(g);
  sum.sm80_ok = true;  // GemmSm80 checks its own layout and alignment rules
  GemmTarget target{props.sm_major, props.sm_minor, Sm90KernelsBuilt(), s.sm_count() > 0};
  const GemmFamily family = SelectGemm(sum, target, p.options.backend);
  absl::Status st;
  switch (family) {
    case GemmFamily::kSm90:
      st = GemmSm90(s, g);
      break;
    case GemmFamily::kSm80:
      st = GemmSm80(s, g);
      break;
    case GemmFamily::kSimt:
      st = GemmSimt(s, g);
      break;
    case GemmFamily::kCublasLt:
      return MatmulCublasLt(s, p, device);
  }
  if (st.ok() || p.options.backend != MatmulBackend::kAuto || !absl::IsUnimplemented(st)) {
    return st;
  }
  return MatmulCublasLt(s, p, device);
}

absl::StatusOr<int> MatmulPreemptible(hal::Stream& s, const MatmulProblem& p, Device device,
                                      const PreemptSignal& signal,
                                      const std::function<void()>& await_resume) {
  if (p.options.backend != MatmulBackend::kAuto && p.options.backend != MatmulBackend::kSm90) {
    return NotImplementedError("matmul: a kernel family other than sm90 was asked for");
  }
  if (s.sm_count() > 0) {
    return NotImplementedError("matmul: partitioned streams are not preempted");
  }
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props,
                       Runtime::Get().cuda_backend()->properties(device.index));
  if (props.sm_major != 9 || !Sm90KernelsBuilt()) {
    return NotImplementedError("matmul: preemptible kernels need an sm_90a build on SM 9.x");
  }
  const GemmLaunch g{p.dtype, p.epilogue.out, false, GemmParamsOf(p), 0, 0, 0, MatmulCost(p)};
  return GemmSm90Preemptible(s, g, signal, await_resume);
}

namespace {
// The epilogue pass: the product read, the output written, the addend and the bias read.
LaunchCost EpilogueCost(const MatmulProblem& p, DType src_dtype) {
  const int64_t n = p.batch * p.m * p.n, out = ItemSize(p.epilogue.out);
  LaunchCost c{n, n * (ItemSize(src_dtype) + out)};
  if (p.epilogue.beta != 0.0 && p.epilogue.addend != nullptr) c.bytes += n * out;
  if (p.epilogue.bias != nullptr) {
    c.bytes += (p.epilogue.bias_batch != 0 ? p.batch : 1) * p.n * out;
  }
  return c;
}
}  // namespace

absl::Status GemmEpilogueApply(hal::Stream& s, const MatmulProblem& p, const void* src,
                               DType src_dtype) {
  kernels::GemmParams params = GemmParamsOf(p);
  // The source is the plain product laid out like the output (unit column stride).
  params.a = src;
  params.a_batch = p.c_batch;
  params.a_row = p.c_row;
  params.a_col = 1;
  const int64_t n = p.batch * p.m * p.n;
  if (n == 0) return absl::OkStatus();
  hal::LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, int64_t{1} << 16));
  void* args[] = {&params};
  return Runtime::Get().dispatcher().LaunchDevice(
      s, absl::StrCat("pgk_gemm_epilogue_", DTypeCode(src_dtype), "_", DTypeCode(p.epilogue.out)),
      dims, args, EpilogueCost(p, src_dtype));
}

}  // namespace pygpukit::ops::cuda_kernels
