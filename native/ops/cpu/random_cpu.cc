// CPU random kernels: the Philox blocks of ops/kernels/philox.h in parallel chunks on the host
// thread pool. This file is built with -ffp-contract=off (native/CMakeLists.txt): a host
// compiler allowed to fuse a * b + c into an FMA would round differently from the CUDA kernels.
#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/philox.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

constexpr int64_t kGrainBlocks = 1 << 12;  // Philox blocks per parallel chunk

}  // namespace

absl::Status Random(hal::Stream& s, DType dtype, const kernels::RandomParams& p, KeepAlive keep) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kernels::IsComplexT<T>::value) {
      return TypeError(absl::StrCat("random: unsupported dtype ", DTypeName(dtype)));
    } else {
      const int64_t per = kernels::RandomPerBlock(p.kind, ItemSize(dtype));
      const int64_t blocks = (p.n + per - 1) / per;
      const int64_t held = HeldBytes(keep);
      return Runtime::Get().dispatcher().LaunchHost(
          s, "random",
          [p, blocks, keep = std::move(keep)] {
            cpu::ParallelFor(blocks, kGrainBlocks, [&](int64_t b, int64_t e) {
              for (int64_t i = b; i < e; ++i) kernels::RandomBlock<T>(p, i);
            });
          },
          {}, held);
    }
  });
}

}  // namespace pygpukit::ops::cpu_kernels
