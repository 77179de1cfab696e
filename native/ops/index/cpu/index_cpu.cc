// CPU gather / scatter: the shared per-element bodies (ops/index/gather.h) in parallel chunks.
#include "ops/index/index_kernels.h"
#include "ops/launch/word.h"

namespace pygpukit::ops {
namespace {

absl::Status GatherCpu(LaunchContext& ctx, int itemsize, const kernels::GatherParams& p,
                       bool scatter) {
  return VisitWord(itemsize, "gather", [&](auto word) {
    using Word = decltype(word);
    if (scatter) {
      return ctx.ForEach("scatter", p.n, [p](int64_t i) { kernels::ScatterElement<Word>(p, i); });
    }
    return ctx.ForEach("gather", p.n, [p](int64_t i) { kernels::GatherElement<Word>(p, i); });
  });
}

PGK_REGISTER_KERNEL(kGatherKernel, kCpu, GatherCpu);

}  // namespace
}  // namespace pygpukit::ops
