// Host side of the CUDA gather / scatter kernels (index.cu).
#include "absl/strings/str_cat.h"
#include "ops/index/index_kernels.h"
#include "ops/launch/cuda_launch.h"

namespace pygpukit::ops {
namespace {

absl::Status GatherCuda(LaunchContext& ctx, int itemsize, const kernels::GatherParams& p,
                        bool scatter) {
  return LaunchGridStride(ctx, absl::StrCat(scatter ? "pgk_scatter_" : "pgk_gather_", itemsize),
                          p.n, p);
}

PGK_REGISTER_KERNEL(kGatherKernel, kCuda, GatherCuda);

}  // namespace
}  // namespace pygpukit::ops
