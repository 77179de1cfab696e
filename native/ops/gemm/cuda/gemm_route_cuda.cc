// The CUDA backend's GEMM entry points: the one switch over the kernel families, the unfused
// epilogue pass and the preemptible product, registered in the family's kernel slots.
#include <algorithm>

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

// out = epilogue(product) elementwise: blocks over the output's rows (up to 2^16 of them,
// grid-stride beyond), threads over a row's columns (a warp for narrow rows).
absl::Status GemmEpilogueCuda(LaunchContext& ctx, const GemmProblem& p,
                              const GemmProblem& product) {
  const int64_t rows = p.batch * p.m;
  if (rows == 0 || p.n == 0) return absl::OkStatus();
  kernels::GemmParams params = ParamsOf(p);
  params.a = product.d;
  params.a_batch = product.d_batch;
  params.a_row = product.d_row;
  params.a_col = 1;
  const unsigned threads =
      static_cast<unsigned>(std::clamp<int64_t>((p.n + 31) / 32 * 32, 32, 256));
  return LaunchBlocks(
      ctx, absl::StrCat("pgk_gemm_epilogue_", DTypeCode(product.out), "_", DTypeCode(p.out)),
      std::min<int64_t>(rows, int64_t{1} << 16), threads, params, GemmEpilogueCost(p, product.out));
}

}  // namespace

PGK_REGISTER_KERNEL(kGemmProduct, kCuda, GemmProductCuda);
PGK_REGISTER_KERNEL(kGemmEpilogue, kCuda, GemmEpilogueCuda);
PGK_REGISTER_KERNEL(kGemmPreemptible, kCuda, GemmSm90Preemptible);

}  // namespace pygpukit::ops::cuda_kernels
