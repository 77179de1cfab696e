// Host side of the Hopper attention kernel (cuda/attention_sm90.cu): whether it serves a
// problem, its TMA tensor maps over q, k and v, the launch.
#include "ops/nn/cuda/attention_sm90_cuda.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/driver_api.h"
#include "core/status.h"
#include "ops/launch/cuda_launch.h"
#include "runtime/embedded_kernels.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kBM = 128;
// Hopper's opt-in limit of dynamic shared memory per block (227 KiB).
static_assert(kernels::AttnSm90SmemBytes(64) <= 232448 &&
              kernels::AttnSm90SmemBytes(128) <= 232448);

// A (D, rows, heads, batch) tensor map with 64 x 128 boxes and the 128-byte swizzle, or
// nullopt where TMA cannot describe the layout (strides not multiples of 16 bytes, ...).
// Strides of extent-1 dims only have to be valid ones.
std::optional<CUtensorMap> EncodeRows(const cuda::DriverApi* api, const void* ptr,
                                      CUtensorMapDataType type, int64_t d, int64_t rows,
                                      int64_t heads, int64_t batch, int64_t s_row, int64_t s_head,
                                      int64_t s_batch) {
  if (heads == 1) s_head = s_row * rows;
  if (batch == 1) s_batch = s_head * heads;
  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows),
                        static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  cuuint64_t strides[3] = {static_cast<cuuint64_t>(s_row * 2), static_cast<cuuint64_t>(s_head * 2),
                           static_cast<cuuint64_t>(s_batch * 2)};
  cuuint32_t box[4] = {64, static_cast<cuuint32_t>(kBM), 1, 1};
  cuuint32_t elem[4] = {1, 1, 1, 1};
  const CUresult r = api->cuTensorMapEncodeTiled(
      &map, type, 4, const_cast<void*>(ptr), dims, strides, box, elem,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return std::nullopt;
  return map;
}

}  // namespace

absl::string_view AttentionKernelForced() {
  const char* e = std::getenv("PYGPUKIT_ATTENTION_KERNEL");
  return e != nullptr ? absl::string_view(e) : absl::string_view();
}

absl::StatusOr<bool> AttentionSm90(LaunchContext& ctx, const hal::DeviceProperties& props,
                                   DType dtype, int64_t head_dim, const kernels::AttnParams& p,
                                   absl::string_view forced) {
  if (props.sm_major != 9 || props.sm_minor != 0 ||
      !absl::StrContains(EmbeddedKernelArchs(), "90a") || absl::StartsWith(forced, "sm80")) {
    return false;
  }
  // Prefill without a mask over contiguous K / V; TMA coordinates are 32-bit.
  const int64_t row_blocks = (p.sq + kBM - 1) / kBM;
  if (p.mask != nullptr || p.block_table != nullptr || p.sq < kBM / 2 || p.sq > INT32_MAX ||
      p.sk > INT32_MAX || row_blocks * p.hq * p.batch > INT32_MAX) {
    return false;
  }
  PGK_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::LoadDriverApi());
  Runtime& rt = Runtime::Get();
  // Encoding a tensor map needs a current context (a thread's first CUDA call may be this one).
  PGK_RETURN_IF_ERROR(rt.cuda_backend()->MakeCurrent(ctx.device().index));
  const CUtensorMapDataType type =
      dtype == DType::BFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  std::optional<CUtensorMap> tq =
      EncodeRows(api, p.q, type, head_dim, p.sq, p.hq, p.batch, p.q_s, p.q_h, p.q_b);
  std::optional<CUtensorMap> tk =
      EncodeRows(api, p.k, type, head_dim, p.sk, p.hk, p.batch, p.k_s, p.k_h, p.k_b);
  std::optional<CUtensorMap> tv =
      EncodeRows(api, p.v, type, head_dim, p.sk, p.hk, p.batch, p.v_s, p.v_h, p.v_b);
  if (!tq || !tk || !tv) return false;  // the SM80 kernel reads any such layout
  hal::LaunchDims dims;
  // Persistent: a CTA holds a whole SM, so one per SM loops over the work items (row block,
  // head, sequence) and loads the next item's tiles under the last one's math; "sm90np" (not
  // persistent) launches one CTA per item instead, to measure the difference.
  const int64_t work = row_blocks * p.hq * p.batch;
  dims.grid[0] = static_cast<unsigned>(
      forced == "sm90np" ? work : std::min<int64_t>(work, StreamSms(ctx.stream(), props)));
  dims.block[0] = 384;
  dims.shared_bytes = kernels::AttnSm90SmemBytes(head_dim);
  // FLOPs: the two products over the keys each row sees (causal: about half); bytes: q and o
  // once, k and v once per query block.
  const int64_t keys = p.causal ? (p.sk + 1) / 2 : p.sk;
  LaunchCost cost;
  cost.flops = 4 * p.batch * p.hq * p.sq * keys * head_dim;
  cost.bytes = 2 * 2 * p.batch * p.hq * p.sq * head_dim +
               2 * 2 * p.batch * p.hq * p.sk * head_dim * row_blocks;
  kernels::AttnParams args = p;
  void* argv[] = {&*tq, &*tk, &*tv, &args};
  const std::string kernel = absl::StrCat(forced == "sm90s"    ? "pgk_attn_sm90s_"
                                          : forced == "sm90pp" ? "pgk_attn_sm90pp_"
                                                               : "pgk_attn_sm90_",
                                          dtype == DType::BFloat16 ? "bf2" : "f2", "_d", head_dim);
  PGK_RETURN_IF_ERROR(ctx.Kernel(kernel, dims, argv, cost));
  return true;
}

}  // namespace pygpukit::ops
