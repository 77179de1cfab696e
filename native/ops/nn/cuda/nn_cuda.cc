// CUDA host side of the nn family: picks the row kernel's vector width and block size
// (cuda/nn_rows.cu) and launches it.
#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/launch/cuda_launch.h"
#include "ops/launch/launch_cost.h"
#include "ops/nn/nn_kernels.h"

namespace pygpukit::ops {
namespace {

using kernels::RowsParams;

bool Aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// The kernels' dtype code, or TypeError (the op layer admits these four only).
absl::StatusOr<absl::string_view> CodeOf(DType dtype, absl::string_view op) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 ||
      dtype == DType::Float64) {
    return DTypeCode(dtype);
  }
  return TypeError(absl::StrCat(op, ": unsupported dtype ", DTypeName(dtype)));
}

absl::Status RowsCuda(LaunchContext& ctx, DType dtype, const RowsParams& p) {
  PGK_ASSIGN_OR_RETURN(absl::string_view code, CodeOf(dtype, ctx.op()));
  const int64_t esize = ItemSize(dtype);
  // 16-byte vectors when every row start and operand allows them.
  const int64_t wide = 16 / esize;
  const bool vec =
      p.cols % wide == 0 && Aligned16(p.x) && Aligned16(p.y) &&
      (p.residual == nullptr || (Aligned16(p.residual) && Aligned16(p.residual_out))) &&
      (p.weight == nullptr || Aligned16(p.weight)) && (p.bias == nullptr || Aligned16(p.bias));
  const int64_t v = vec ? wide : 1;
  const int64_t nvec = p.cols / v;
  // Enough threads that kRowCache vectors each cover the row (up to the kernel's launch bound;
  // longer rows re-read the rest), at least one warp.
  const int64_t want = (nvec + kernels::kRowCache - 1) / kernels::kRowCache;
  const unsigned threads = static_cast<unsigned>(std::clamp<int64_t>(
      (want + 31) / 32 * 32, 32, kernels::RowMaxThreads(static_cast<int>(esize))));
  const int64_t blocks = std::min<int64_t>(p.rows, int64_t{1} << 30);
  // Bytes: x (and residual, residual_out) read / written once, y written, weight and bias read
  // per row from cache (not counted); FLOPs: a few per element.
  const int64_t elems = p.rows * p.cols;
  const int64_t streams = 2 + (p.residual != nullptr ? 2 : 0);
  LaunchCost cost;
  cost.bytes = elems * esize * streams;
  cost.flops = elems * 5;
  return LaunchBlocks(ctx, absl::StrCat("pgk_nn_rows_", code, "_o", p.op, "_v", v), blocks, threads,
                      p, cost);
}

absl::Status RopeCuda(LaunchContext& ctx, DType dtype, const kernels::RopeParams& p) {
  PGK_ASSIGN_OR_RETURN(absl::string_view code, CodeOf(dtype, ctx.op()));
  const int64_t items = p.rows * (p.dim - p.rot / 2);
  LaunchCost cost;
  cost.bytes = 2 * p.rows * p.dim * ItemSize(dtype);  // x read, out written (tables cached)
  cost.flops = 6 * p.rows * (p.rot / 2);
  return LaunchGridStride(ctx, absl::StrCat("pgk_nn_rope_", code), items, p, cost);
}

PGK_REGISTER_KERNEL(kRowsKernel, kCuda, RowsCuda);
PGK_REGISTER_KERNEL(kRopeKernel, kCuda, RopeCuda);

}  // namespace
}  // namespace pygpukit::ops
