// CUDA host side of the fused attention kernels (cuda/attention_sm80.cu): picks the kernel for
// the dtype and head dim, checks the device, launches.
#include <climits>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/nn/nn_kernels.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kBM = 64, kBN = 64, kMaxGridYZ = 65535;

absl::Status AttentionCuda(LaunchContext& ctx, DType dtype, int64_t head_dim,
                           const kernels::AttnParams& p) {
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(ctx.device()));
  if (props.sm_major < 8) {
    return NotImplementedError("scaled_dot_product_attention: the fused kernels need SM 8.0+");
  }
  if ((dtype != DType::BFloat16 && dtype != DType::Float16) ||
      (head_dim != 64 && head_dim != 128) || p.hk > kMaxGridYZ || p.batch > kMaxGridYZ) {
    return NotImplementedError(absl::StrCat("scaled_dot_product_attention: no fused kernel for ",
                                            DTypeName(dtype), " head dim ", head_dim));
  }
  // A CTA per 64 packed rows of a KV head's group of query heads (attention_sm80.cu).
  const int64_t rows = p.hq / p.hk * p.sq;
  if ((rows + kBM - 1) / kBM > INT32_MAX) {
    return NotImplementedError("scaled_dot_product_attention: too many query rows per head");
  }
  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>((rows + kBM - 1) / kBM);
  dims.grid[1] = static_cast<unsigned>(p.hk);
  dims.grid[2] = static_cast<unsigned>(p.batch);
  dims.block[0] = 128;
  dims.shared_bytes = static_cast<unsigned>(5 * kBN * head_dim * 2);  // Q, K x 2, V x 2
  // FLOPs: the two products over the keys each row sees (causal: about half); bytes: q, o and
  // k, v once per query block.
  const int64_t keys = p.causal ? (p.sk + 1) / 2 : p.sk;
  LaunchCost cost;
  cost.flops = 4 * p.batch * p.hq * p.sq * keys * head_dim;
  cost.bytes = 2 * 2 * p.batch * p.hq * p.sq * head_dim +
               2 * 2 * p.batch * p.hk * p.sk * head_dim * static_cast<int64_t>(dims.grid[0]);
  const std::string kernel =
      absl::StrCat("pgk_attn_sm80_", dtype == DType::BFloat16 ? "bf2" : "f2", "_d", head_dim);
  kernels::AttnParams args = p;
  void* argv[] = {&args};
  return ctx.Kernel(kernel, dims, argv, cost);
}

PGK_REGISTER_KERNEL(kAttentionKernel, kCuda, AttentionCuda);

}  // namespace
}  // namespace pygpukit::ops
