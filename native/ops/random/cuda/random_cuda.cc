// Host side of the CUDA random kernels (random.cu): one thread per Philox block.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/launch/cuda_launch.h"
#include "ops/random/random_kernels.h"

namespace pygpukit::ops {
namespace {

absl::Status RandomCuda(LaunchContext& ctx, DType dtype, const kernels::RandomParams& p) {
  if (IsComplex(dtype)) {
    return TypeError(absl::StrCat("random: unsupported dtype ", DTypeName(dtype)));
  }
  const int64_t per = kernels::RandomPerBlock(p.kind, ItemSize(dtype));
  return LaunchGridStride(ctx, absl::StrCat("pgk_random_", DTypeCode(dtype)), (p.n + per - 1) / per,
                          p);
}

PGK_REGISTER_KERNEL(kRandomKernel, kCuda, RandomCuda);

}  // namespace
}  // namespace pygpukit::ops
