// The CUDA backend's GEMM entry points: the one switch over the kernel families, the unfused
// epilogue pass and the preemptible product, registered in the family's kernel slots.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_kernels.h"
#include "ops/launch/cuda_launch.h"

namespace pygpukit::ops::cuda_kernels {

absl::Status GemmProductCuda(LaunchContext& ctx, const GemmProblem& p, const GemmChoice& choice) {
  switch (choice.family) {
    case GemmFamily::kSm90:
      return GemmSm90(ctx, p, choice);
    case GemmFamily::kSm80:
      return GemmSm80(ctx, p);
    case GemmFamily::kSimt:
      return GemmSimt(ctx, p);
    case GemmFamily::kCublasLt:
      return GemmCublasLt(ctx, p);
  }
  return NotImplementedError(
      absl::StrCat("matmul: unknown kernel family ", TuneChoiceText(choice)));
}

namespace {

// out = epilogue(product) elementwise over the whole output (a grid-stride kernel).
absl::Status GemmEpilogueCuda(LaunchContext& ctx, const GemmProblem& p,
                              const GemmProblem& product) {
  const int64_t n = p.batch * p.m * p.n;
  if (n == 0) return absl::OkStatus();
  kernels::GemmParams params = ParamsOf(p);
  params.a = product.d;
  params.a_batch = product.d_batch;
  params.a_row = product.d_row;
  params.a_col = 1;
  return LaunchGridStride(
      ctx, absl::StrCat("pgk_gemm_epilogue_", DTypeCode(product.out), "_", DTypeCode(p.out)), n,
      params, GemmEpilogueCost(p, product.out));
}

}  // namespace

PGK_REGISTER_KERNEL(kGemmProduct, kCuda, GemmProductCuda);
PGK_REGISTER_KERNEL(kGemmEpilogue, kCuda, GemmEpilogueCuda);
PGK_REGISTER_KERNEL(kGemmPreemptible, kCuda, GemmSm90Preemptible);

}  // namespace pygpukit::ops::cuda_kernels
