// The creation family's launches: a launch context over the arrays, the parameter block, the
// kernel of the context's backend.
#include <cstring>

#include "core/status.h"
#include "ops/creation/creation_kernels.h"
#include "ops/launch/layout.h"

namespace pygpukit::ops {

absl::Status LaunchCopy(const GPUArray& src, const GPUArray& dst) {
  if (dst.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("copy", {&src, &dst}));
  return kCopyKernel(ctx, src, dst);
}

absl::Status LaunchFill(const GPUArray& dst, const unsigned char* value) {
  if (dst.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("fill", {&dst}));
  kernels::ElementwiseParams p;
  PGK_RETURN_IF_ERROR(ElementwiseParamsOf(dst, nullptr, nullptr, p, "fill"));
  std::memcpy(p.scalar, value, dst.itemsize());
  return kFillKernel(ctx, static_cast<int>(dst.itemsize()), p);
}

absl::Status LaunchArange(const GPUArray& dst, const kernels::ArangeParams& params) {
  if (dst.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("arange", {&dst}));
  kernels::ArangeParams p = params;
  p.n = dst.size();
  p.out = dst.data();
  return kArangeKernel(ctx, dst.dtype(), p);
}

}  // namespace pygpukit::ops
