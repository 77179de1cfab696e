// CUDA host side of the fused attention kernels: the Hopper kernel where it serves
// (attention_sm90_cuda.cc), else the SM80 one (cuda/attention_sm80.cu): checks the device,
// picks the kernel for the dtype and head dim, launches.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/launch/cuda_launch.h"
#include "ops/nn/cuda/attention_sm90_cuda.h"
#include "ops/nn/nn_kernels.h"
#include "ops/ops.h"
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
  // Hopper: the sm90 kernel where it serves (prefill without a mask).
  const absl::string_view forced = AttentionKernelForced();
  PGK_ASSIGN_OR_RETURN(const bool sm90, AttentionSm90(ctx, props, dtype, head_dim, p, forced));
  if (sm90) return absl::OkStatus();
  // A CTA per 64 packed rows of a KV head's group of query heads (attention_sm80.cu).
  const int64_t rows = p.hq / p.hk * p.sq;
  if ((rows + kBM - 1) / kBM > INT32_MAX) {
    return NotImplementedError("scaled_dot_product_attention: too many query rows per head");
  }
  const int64_t row_blocks = (rows + kBM - 1) / kBM;
  // Split-KV where the row blocks alone would leave SMs idle (decode of few long sequences):
  // enough splits for about two CTAs per SM, each keeping at least 4 key tiles.
  const int64_t sms = StreamSms(ctx.stream(), props);
  const int64_t ctas = row_blocks * p.hk * p.batch;
  const int64_t tiles = (p.sk + kBN - 1) / kBN;
  int64_t splits = 1;
  if (ctas < sms && tiles >= 8) {
    splits = std::clamp<int64_t>(2 * sms / ctas, 1, tiles / 4);
  }
  kernels::AttnParams args = p;
  args.splits = static_cast<int32_t>(splits);
  args.row_blocks = static_cast<int32_t>(row_blocks);
  std::optional<GPUArray> partial_o, partial_ml;
  if (splits > 1) {
    const int64_t units = ctas * splits;
    PGK_ASSIGN_OR_RETURN(partial_o, Empty({units * kBM * head_dim}, DType::Float32, ctx.device()));
    PGK_ASSIGN_OR_RETURN(partial_ml, Empty({units * kBM * 2}, DType::Float32, ctx.device()));
    PGK_RETURN_IF_ERROR(ctx.Use(*partial_o));
    PGK_RETURN_IF_ERROR(ctx.Use(*partial_ml));
    args.partial_o = static_cast<float*>(partial_o->data());
    args.partial_ml = static_cast<float*>(partial_ml->data());
  }
  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(row_blocks * splits);
  dims.grid[1] = static_cast<unsigned>(p.hk);
  dims.grid[2] = static_cast<unsigned>(p.batch);
  dims.block[0] = 128;
  // Q and `stages` K and V tiles: three stages (more of the cache in flight) where two CTAs of
  // that size still fit a SM (its shared memory: the per-block opt-in limit plus the 1 KiB
  // reserved per block), else two.
  const int64_t tile = kBN * head_dim * 2;
  const bool fits3 = 2 * (7 * tile + 1024) <= props.max_shared_memory_per_block + 1024;
  const int64_t stages = fits3 && forced != "sm80s2" ? 3 : 2;
  dims.shared_bytes = static_cast<unsigned>((1 + 2 * stages) * tile);
  // FLOPs: the two products over the keys each row sees (causal: about half); bytes: q, o and
  // k, v once per query block.
  const int64_t keys = p.causal ? (p.sk + 1) / 2 : p.sk;
  LaunchCost cost;
  cost.flops = 4 * p.batch * p.hq * p.sq * keys * head_dim;
  cost.bytes = 2 * 2 * p.batch * p.hq * p.sq * head_dim +
               2 * 2 * p.batch * p.hk * p.sk * head_dim * row_blocks;
  const std::string code = absl::StrCat(dtype == DType::BFloat16 ? "bf2" : "f2", "_d", head_dim);
  void* argv[] = {&args};
  PGK_RETURN_IF_ERROR(
      ctx.Kernel(absl::StrCat("pgk_attn_sm80_", code, stages == 3 ? "_s3" : ""), dims, argv, cost));
  if (splits == 1) return absl::OkStatus();
  hal::LaunchDims combine;
  combine.grid[0] = static_cast<unsigned>(row_blocks);
  combine.grid[1] = dims.grid[1];
  combine.grid[2] = dims.grid[2];
  combine.block[0] = 128;
  LaunchCost merge;
  merge.bytes = ctas * splits * kBM * (head_dim + 2) * 4 + 2 * p.batch * p.hq * p.sq * head_dim;
  return ctx.Kernel(absl::StrCat("pgk_attn_combine_", code), combine, argv, merge);
}

PGK_REGISTER_KERNEL(kAttentionKernel, kCuda, AttentionCuda);

}  // namespace
}  // namespace pygpukit::ops
