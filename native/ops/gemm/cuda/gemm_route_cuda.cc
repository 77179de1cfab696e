// The CUDA backend's GEMM entry points: the one switch over the kernel families, the unfused
// epilogue pass and the preemptible product, registered in the family's kernel slots.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_epilogue.h"
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

// Whether the pass may move four columns per vector (the v4 kernels' preconditions): a
// float32 product, n and every row / batch stride multiples of four, the product 16-byte and D,
// C and the bias 8-byte aligned (16 for float32 outputs), C with unit column stride.
bool Vec4Friendly(const kernels::GemmParams& p, DType src, int64_t out_bytes) {
  auto aligned = [](const void* ptr, int64_t bytes) {
    return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0;
  };
  const int64_t vec = 4 * out_bytes;
  bool ok = src == DType::Float32 && p.n % 4 == 0 && p.a_col == 1 && p.a_row % 4 == 0 &&
            p.a_batch % 4 == 0 && aligned(p.a, 16) && p.d_row % 4 == 0 && p.d_batch % 4 == 0 &&
            aligned(p.d, vec);
  if (p.beta != 0.0) {
    ok = ok && p.c_col == 1 && p.c_row % 4 == 0 && p.c_batch % 4 == 0 && aligned(p.c, vec);
  }
  if (p.bias != nullptr) ok = ok && p.bias_batch % 4 == 0 && aligned(p.bias, vec);
  return ok;
}

// out = epilogue(product) elementwise: blocks over the output's rows (up to 2^16 of them,
// grid-stride beyond), threads over a row's columns (a warp for narrow rows); with few rows,
// the grid's y blocks split each row's column chunks so that about kPassBlocks blocks run.
absl::Status GemmEpilogueCuda(LaunchContext& ctx, const GemmProblem& p,
                              const GemmProblem& product) {
  const int64_t rows = p.batch * p.m;
  if (rows == 0 || p.n == 0) return absl::OkStatus();
  kernels::GemmParams params = ParamsOf(p);
  params.a = product.d;
  params.a_batch = product.d_batch;
  params.a_row = product.d_row;
  params.a_col = 1;
  const bool vec4 = Vec4Friendly(params, product.out, ItemSize(p.out));
  const int64_t lanes = vec4 ? p.n / 4 : p.n;
  const unsigned threads =
      static_cast<unsigned>(std::clamp<int64_t>((lanes + 31) / 32 * 32, 32, 256));
  constexpr int64_t kPassBlocks = 1024, kIlp = kernels::kEpiloguePassIlp;
  const int64_t row_blocks = std::min<int64_t>(rows, int64_t{1} << 16);
  const int64_t chunks = (lanes + threads * kIlp - 1) / (threads * kIlp);
  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(row_blocks);
  dims.grid[1] = static_cast<unsigned>(
      std::clamp<int64_t>((kPassBlocks + row_blocks - 1) / row_blocks, 1, chunks));
  dims.block[0] = threads;
  void* argv[] = {&params};
  return ctx.Kernel(absl::StrCat("pgk_gemm_epilogue_", vec4 ? "v4_" : "", DTypeCode(product.out),
                                 "_", DTypeCode(p.out)),
                    dims, argv, GemmEpilogueCost(p, product.out));
}

}  // namespace

PGK_REGISTER_KERNEL(kGemmProduct, kCuda, GemmProductCuda);
PGK_REGISTER_KERNEL(kGemmEpilogue, kCuda, GemmEpilogueCuda);
PGK_REGISTER_KERNEL(kGemmPreemptible, kCuda, GemmSm90Preemptible);

}  // namespace pygpukit::ops::cuda_kernels
