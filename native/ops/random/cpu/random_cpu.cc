// CPU random kernels: the Philox blocks of ops/random/philox.h in parallel chunks on the host
// thread pool. This file is built with -ffp-contract=off (native/CMakeLists.txt): a host
// compiler allowed to fuse a * b + c into an FMA would round differently from the CUDA kernels.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/random/random_kernels.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kGrainBlocks = 1 << 12;  // Philox blocks per parallel chunk

absl::Status RandomCpu(LaunchContext& ctx, DType dtype, const kernels::RandomParams& p) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kernels::IsComplexT<T>::value) {
      return TypeError(absl::StrCat("random: unsupported dtype ", DTypeName(dtype)));
    } else {
      const int64_t per = kernels::RandomPerBlock(p.kind, ItemSize(dtype));
      return ctx.ForEach(
          "random", (p.n + per - 1) / per, [p](int64_t i) { kernels::RandomBlock<T>(p, i); },
          kGrainBlocks);
    }
  });
}

PGK_REGISTER_KERNEL(kRandomKernel, kCpu, RandomCpu);

}  // namespace
}  // namespace pygpukit::ops
