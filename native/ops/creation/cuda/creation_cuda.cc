// Host side of the CUDA creation kernels (creation.cu): copies through a JIT kernel per dtype
// pair and layout where NVRTC works, else the precompiled copy kernels; fills and aranges
// precompiled.
#include <atomic>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/creation_kernels.h"
#include "ops/elementwise/cuda/elementwise_jit.h"
#include "ops/launch/cuda_launch.h"
#include "ops/launch/layout.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

using kernels::ElementwiseParams;

absl::Status CopyCuda(LaunchContext& ctx, const GPUArray& src, const GPUArray& dst) {
  // Devices whose copy JIT failed once (an arch NVRTC does not know, a broken cache): their
  // copies go to the precompiled kernels without compiling again.
  static std::atomic<uint64_t> jit_failed{0};
  const uint64_t bit = uint64_t{1} << (ctx.device().index & 63);
  absl::Status jit = absl::OkStatus();
  if ((jit_failed.load(std::memory_order_relaxed) & bit) == 0 &&
      Runtime::Get().jit().Available().ok()) {
    jit = CopyJit(ctx, src, dst);  // enqueues nothing when it fails
    if (jit.ok()) return absl::OkStatus();
    jit_failed.fetch_or(bit, std::memory_order_relaxed);
  }
  ElementwiseParams p;
  PGK_RETURN_IF_ERROR(ElementwiseParamsOf(dst, &src, nullptr, p, "copy"));
  p.a_dtype = static_cast<int32_t>(src.dtype());
  absl::Status fallback =
      LaunchGridStride(ctx, absl::StrCat("pgk_copy_", DTypeCode(dst.dtype())), p.n, p);
  if (!fallback.ok() && !jit.ok()) {
    // Neither path works: say why the JIT failed too.
    return absl::Status(fallback.code(),
                        absl::StrCat(fallback.message(), " (the JIT copy: ", jit.message(), ")"));
  }
  return fallback;
}

absl::Status FillCuda(LaunchContext& ctx, int itemsize, const ElementwiseParams& p) {
  return LaunchGridStride(ctx, absl::StrCat("pgk_fill_", itemsize), p.n, p);
}

absl::Status ArangeCuda(LaunchContext& ctx, DType dtype, const kernels::ArangeParams& p) {
  if (IsComplex(dtype) || dtype == DType::Bool) {
    return TypeError(absl::StrCat("arange: unsupported dtype ", DTypeName(dtype)));
  }
  return LaunchGridStride(ctx, absl::StrCat("pgk_arange_", DTypeCode(dtype)), p.n, p);
}

PGK_REGISTER_KERNEL(kCopyKernel, kCuda, CopyCuda);
PGK_REGISTER_KERNEL(kFillKernel, kCuda, FillCuda);
PGK_REGISTER_KERNEL(kArangeKernel, kCuda, ArangeCuda);

}  // namespace
}  // namespace pygpukit::ops
