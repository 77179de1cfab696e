// CPU kernels of the creation family: the shared per-element bodies (creation_elements.h) in
// parallel chunks on the host thread pool.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/creation_kernels.h"
#include "ops/launch/layout.h"
#include "ops/launch/word.h"

namespace pygpukit::ops {
namespace {

using kernels::ElementwiseParams;

absl::Status CopyCpu(LaunchContext& ctx, const GPUArray& src, const GPUArray& dst) {
  ElementwiseParams p;
  PGK_RETURN_IF_ERROR(ElementwiseParamsOf(dst, &src, nullptr, p, "copy"));
  return VisitDType(src.dtype(), [&](auto st) {
    return VisitDType(dst.dtype(), [&](auto dt) {
      using S = typename decltype(st)::type;
      using D = typename decltype(dt)::type;
      return ctx.ForEach("copy", p.n, [p](int64_t i) { kernels::CopyElement<S, D>(p, i); });
    });
  });
}

absl::Status FillCpu(LaunchContext& ctx, int itemsize, const ElementwiseParams& p) {
  return VisitWord(itemsize, "fill", [&](auto word) {
    using Word = decltype(word);
    return ctx.ForEach("fill", p.n, [p](int64_t i) { kernels::FillElement<Word>(p, i); });
  });
}

absl::Status ArangeCpu(LaunchContext& ctx, DType dtype, const kernels::ArangeParams& p) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kernels::IsComplexT<T>::value || std::is_same_v<T, bool>) {
      return TypeError(absl::StrCat("arange: unsupported dtype ", DTypeName(dtype)));
    } else {
      return ctx.ForEach("arange", p.n, [p](int64_t i) { kernels::ArangeElement<T>(p, i); });
    }
  });
}

PGK_REGISTER_KERNEL(kCopyKernel, kCpu, CopyCpu);
PGK_REGISTER_KERNEL(kFillKernel, kCpu, FillCpu);
PGK_REGISTER_KERNEL(kArangeKernel, kCpu, ArangeCpu);

}  // namespace
}  // namespace pygpukit::ops
