// Host side of the Hopper GEMM (gemm_sm90_kernel.h): derives the TMA operands (the rules are
// ops/gemm/gemm_accepts.h's, checked by the planner), encodes one tensor map per operand, picks
// the tile width and launches a persistent grid of one CTA per SM; for preemptible products,
// relaunches until the product is done.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/driver_api.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_accepts.h"
#include "ops/gemm/gemm_sm90_plan.h"
#include "runtime/blocking.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/pinned_pool.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {
namespace {

constexpr int kBM = 128, kThreads = 384;

// Shared memory of one launch: operand stages, the epilogue's TMA-store staging (two 64 x 64
// 16-bit slabs per consumer warpgroup), the mbarriers, the consumers' split-K arrival flags and
// the preemption state (PreemptSmem), and the 1 KiB the kernel may skip to align the stages to
// the swizzle atom.
unsigned SharedBytes(int bn) {
  const int stages = bn == 256 ? 4 : 6;
  constexpr int kStaging = 2 * 2 * 64 * 64 * 2;
  // A stage holds 128 bytes of K for every tile row and column.
  return static_cast<unsigned>(stages * (kBM + bn) * 128 + kStaging + stages * 16 + 48 + 1024);
}

absl::StatusOr<CUtensorMap> EncodeMap(const cuda::DriverApi* api, const Sm90Operand& o,
                                      CUtensorMapDataType type, uint32_t box_outer) {
  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  const int64_t batch = o.batch_stride != 0 ? o.batch : 1;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(o.inner), static_cast<cuuint64_t>(o.outer),
                        static_cast<cuuint64_t>(batch)};
  // A broadcast batch dim has extent 1; its stride only has to be a valid one.
  const int64_t bstride =
      o.batch_stride != 0 ? o.batch_stride : o.ld * std::max<int64_t>(o.outer, 1);
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(o.ld * o.esize),
                           static_cast<cuuint64_t>(bstride * o.esize)};
  // The inner extent of every box is one 128-byte swizzle row.
  cuuint32_t box[3] = {static_cast<cuuint32_t>(128 / o.esize), box_outer, 1};
  cuuint32_t elem[3] = {1, 1, 1};
  const CUresult r = api->cuTensorMapEncodeTiled(
      &map, type, 3, const_cast<void*>(o.ptr), dims, strides, box, elem,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    // A layout TMA cannot describe (e.g. overlapping batches): another family serves it.
    return NotImplementedError(absl::StrCat(
        "matmul: sm90 kernels cannot describe an operand of ", o.outer, " x ", o.inner,
        " (leading dim ", o.ld, ", batch stride ", o.batch_stride,
        ") with a TMA tensor map: ", cuda::DriverStatus(r, "cuTensorMapEncodeTiled").message()));
  }
  return map;
}

// Measurement knobs, read once: PYGPUKIT_SM90_BN=128|256 fixes the tile width,
// PYGPUKIT_SM90_CLUSTER=0 turns clusters off, PYGPUKIT_SM90_SPLITS=1..16 fixes the K splits
// (1: split-K off). A malformed value is reported once and ignored.
struct Sm90Env {
  int bn = 0;  // 0: chosen per problem
  bool clusters = true;
  int splits = 0;  // 0: chosen per problem
};

Sm90Env ReadSm90Env() {
  Sm90Env e;
  if (const char* v = std::getenv("PYGPUKIT_SM90_BN"); v != nullptr && *v != '\0') {
    const std::string s(v);
    if (s == "128" || s == "256") {
      e.bn = std::stoi(s);
    } else {
      std::fprintf(stderr, "pygpukit: ignoring PYGPUKIT_SM90_BN=%s (expected 128 or 256)\n", v);
    }
  }
  if (const char* v = std::getenv("PYGPUKIT_SM90_CLUSTER")) e.clusters = std::string(v) != "0";
  if (const char* v = std::getenv("PYGPUKIT_SM90_SPLITS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 16) {
      e.splits = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "pygpukit: ignoring PYGPUKIT_SM90_SPLITS=%s (expected 1..16)\n", v);
    }
  }
  return e;
}

// GemmSm90, or with `preempt` GemmSm90Preemptible (its preemption count in *preemptions).
absl::Status GemmSm90Impl(LaunchContext& ctx, const GemmProblem& g, const GemmChoice& choice,
                          const PreemptSignal* preempt, YieldHook* hook, int* preemptions) {
  hal::Stream& s = ctx.stream();
  Runtime& rt = Runtime::Get();
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, rt.properties(s.device()));
  const kernels::GemmParams p = ParamsOf(g);
  const int esize = Sm90ElemBytes(g.in);
  PGK_ASSIGN_OR_RETURN(auto operands, Sm90Operands(p, esize));
  const auto& [a, b] = operands;
  const bool a_kmajor = a.kmajor, b_kmajor = b.kmajor;

  static const Sm90Env env = ReadSm90Env();
  Sm90PlanInput plan_in;
  plan_in.m = p.m;
  plan_in.n = p.n;
  plan_in.k = p.k;
  plan_in.batch = p.batch;
  plan_in.elem_bytes = esize;
  plan_in.out_bytes = ItemSize(g.out);
  plan_in.sms = StreamSms(s, props);
  plan_in.force_bn = choice.sm90_bn != 0 ? choice.sm90_bn : env.bn;
  plan_in.force_cluster = choice.sm90_cluster;
  // A cluster fixed by the caller (autotuner) keeps its plan unsplit unless splits are asked.
  plan_in.force_splits = choice.sm90_cluster > 1 ? 1 : env.splits;
  plan_in.clusters = env.clusters;
  if (IsFloat8(g.in)) {
    // The 8-bit kernels are built without clusters, with 128-wide tiles only (promotion).
    if (choice.sm90_cluster > 1) {
      return NotImplementedError("scaled_matmul: the sm90 8-bit kernels run without clusters");
    }
    if (choice.sm90_bn == 256) {
      return NotImplementedError("scaled_matmul: the sm90 8-bit kernels use 128-wide tiles");
    }
    plan_in.force_bn = 128;
    plan_in.force_cluster = 1;
    plan_in.clusters = false;
  }
  if (g.grouped()) {
    // Tile rows of every group in one grid (GroupedTableSize): whole tiles, no clusters (a
    // cluster's two tile rows could belong to two groups).
    if (choice.sm90_cluster > 1) {
      return NotImplementedError("grouped_matmul: the sm90 grouped launch runs without clusters");
    }
    if (g.group_tiles_m > INT32_MAX / kBM) {
      return NotImplementedError(
          "grouped_matmul: the groups' tile rows exceed 32-bit TMA coordinates");
    }
    plan_in.m = g.group_tiles_m * kBM;
    plan_in.force_cluster = 1;
    plan_in.force_splits = 1;
    plan_in.clusters = false;
  }
  if (preempt != nullptr) {  // the _p kernels: whole 128 x 256 tiles, one CTA per cluster
    plan_in.force_bn = 256;
    plan_in.force_cluster = 1;
    plan_in.force_splits = 1;
    plan_in.clusters = false;
  }
  PGK_ASSIGN_OR_RETURN(Sm90Plan plan, PlanSm90(plan_in));

  // Split-K workspace: partial sums and arrival counters, transient runtime scratch from the
  // pool on this stream (not charged to the tenant's quota, like cuBLASLt's workspace; freed at
  // return, stream-ordered, so no later work on `s` gets it before the kernel is done). Without
  // the memory for it the product runs unsplit rather than failing.
  std::shared_ptr<Buffer> workspace;
  if (plan.split_tiles() > 0) {
    const int64_t bytes =
        plan.partial_floats() * int64_t{sizeof(float)} + plan.counters() * int64_t{sizeof(int32_t)};
    PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(s.device()));
    QuotaScope uncharged(nullptr);
    absl::StatusOr<std::shared_ptr<Buffer>> got = pool->Allocate(static_cast<size_t>(bytes), s);
    if (got.ok()) {
      workspace = *std::move(got);
    } else if (absl::IsResourceExhausted(got.status())) {
      plan_in.force_splits = 1;
      PGK_ASSIGN_OR_RETURN(plan, PlanSm90(plan_in));
    } else {
      return got.status();
    }
  }
  const int bn = plan.bn, cluster = plan.cluster;
  kernels::GemmParams params = p;
  // Tile counts are in cluster tiles (cluster CTAs stacked along M).
  params.tiles_m = static_cast<int32_t>(plan.tiles_m);
  params.tiles_n = static_cast<int32_t>(plan.tiles_n);
  params.group_m = plan.group_m;
  params.splits = plan.splits;
  params.split_kblocks = plan.split_kblocks;
  params.dp_tiles = plan.dp_tiles;
  const int64_t units = plan.units();
  const int sms = plan_in.sms;
  if (workspace != nullptr) {
    const int64_t counter_bytes = plan.counters() * int64_t{sizeof(int32_t)};
    auto* base = static_cast<uint8_t*>(workspace->data());
    params.partials = reinterpret_cast<float*>(base);
    params.counters = reinterpret_cast<int32_t*>(base + plan.partial_floats() * sizeof(float));
    PGK_RETURN_IF_ERROR(ctx.Library("gemm_sm90_split_counters", [&] {
      return rt.cuda_backend()->MemsetAsync(params.counters, 0, static_cast<size_t>(counter_bytes),
                                            s);
    }));
  }

  PGK_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::LoadDriverApi());
  // Encoding a tensor map needs a current context, which a thread whose first CUDA call this is
  // (its allocations served from the pool's cache) does not have yet.
  PGK_RETURN_IF_ERROR(rt.cuda_backend()->MakeCurrent(s.device().index));
  // Float32 operands are rounded to TF32 by the copy (TFLOAT32 maps): the wgmma would otherwise
  // truncate (H200, 1024^3: max error 1.8e-4 truncated vs 7.7e-5 rounded, as cuBLASLt).
  const CUtensorMapDataType type = g.in == DType::BFloat16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : g.in == DType::Float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : IsFloat8(g.in)         ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                                            : CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
  // K-major boxes are 128 bytes of K x tile rows (a CTA's share of them when B is multicast);
  // MN-major ones (16-bit only) 64 (MN) x 64 (K), several per tile.
  PGK_ASSIGN_OR_RETURN(CUtensorMap map_a, EncodeMap(api, a, type, a_kmajor ? kBM : 64));
  PGK_ASSIGN_OR_RETURN(CUtensorMap map_b, EncodeMap(api, b, type, b_kmajor ? bn / cluster : 64));

  // 16-bit results in the inputs' dtype (fused epilogue or not) leave through TMA stores
  // (asynchronous, clipped at the edges) when D is a layout TMA can write; the rest use the
  // register epilogue.
  // (16-bit results of 8-bit operands too.)
  int tma_store = 0;
  CUtensorMap map_d;
  std::memset(&map_d, 0, sizeof(map_d));
  const int out_bytes = ItemSize(g.out);
  if ((g.out == g.in || IsFloat8(g.in)) && out_bytes == 2 &&
      TmaFriendly(p.d, p.d_row, p.batch > 1 ? p.d_batch : 0, out_bytes)) {
    const Sm90Operand d{p.d,     p.n,  p.m,      p.d_row, p.batch > 1 ? p.d_batch : 0,
                        p.batch, true, out_bytes};
    const CUtensorMapDataType d_type = g.out == DType::BFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    absl::StatusOr<CUtensorMap> m = EncodeMap(api, d, d_type, 64);
    if (m.ok()) {
      map_d = *m;
      tma_store = 1;
    }
  }

  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(std::min<int64_t>(units, sms / cluster) * cluster);
  dims.block[0] = kThreads;
  dims.shared_bytes = SharedBytes(bn);
  if (cluster > 1) {
    dims.cluster[0] = cluster;
    dims.cluster[1] = dims.cluster[2] = 1;
  }
  const std::string kernel = absl::StrCat("pgk_gemm_sm90_128x", bn,
                                          cluster > 1          ? "_c2"
                                          : preempt != nullptr ? "_p"
                                                               : "",
                                          "_", a_kmajor ? "k" : "m", b_kmajor ? "k" : "n", "_",
                                          DTypeCode(g.in), "_", DTypeCode(g.out));
  void* args[] = {&map_a, &map_b, &map_d, &params, &tma_store};
  const LaunchCost cost = GemmCost(g);
  if (preempt == nullptr) return ctx.Kernel(kernel, dims, args, cost);

  // Preemptible: the CTAs' saved state (stream-ordered scratch, like the split-K workspace) and
  // a host word the stopping CTAs set. Each launch is waited for on the host; a preempted one
  // is launched again (resuming) once the signal's host copy is clear.
  PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(s.device()));
  std::shared_ptr<Buffer> state;
  {
    QuotaScope uncharged(nullptr);
    absl::StatusOr<std::shared_ptr<Buffer>> got =
        pool->Allocate(static_cast<size_t>(kernels::PreemptStateBytes(dims.grid[0], bn)), s);
    if (absl::IsResourceExhausted(got.status())) {
      return NotImplementedError("matmul: no device memory for the preemption state");
    }
    PGK_RETURN_IF_ERROR(got.status());
    state = *std::move(got);
  }
  PGK_ASSIGN_OR_RETURN(PinnedPool * pinned, rt.pinned_pool(DeviceType::kCUDA));
  PGK_ASSIGN_OR_RETURN(void* word, pinned->Allocate(sizeof(uint32_t)));
  auto* preempted = new (word) std::atomic<uint32_t>(0);
  params.preempt = preempt->device;
  params.preempted = reinterpret_cast<uint32_t*>(preempted);
  params.preempt_state = static_cast<uint8_t*>(state->data());
  absl::Status st;
  for (params.resume = 0;; params.resume = 1) {
    // A launch while the word is set would stop at once: wait for the urgent work first.
    if (preempt->host->load(std::memory_order_acquire) != 0) hook->AwaitResume();
    preempted->store(0, std::memory_order_relaxed);
    st = ctx.Kernel(kernel, dims, args, cost, LaunchMode::kImmediate);
    if (!st.ok()) break;
    {
      BlockingRegion unlocked;
      st = rt.cuda_backend()->Synchronize(s);
    }
    if (!st.ok() || preempted->load(std::memory_order_acquire) == 0) break;
    ++*preemptions;
  }
  PGK_RETURN_IF_ERROR(pinned->Free(word));
  return st;
}

}  // namespace

absl::Status GemmSm90(LaunchContext& ctx, const GemmProblem& p, const GemmChoice& choice) {
  return GemmSm90Impl(ctx, p, choice, nullptr, nullptr, nullptr);
}

absl::StatusOr<int> GemmSm90Preemptible(LaunchContext& ctx, const GemmProblem& p, YieldHook& hook,
                                        const PreemptSignal& signal) {
  int preemptions = 0;
  PGK_RETURN_IF_ERROR(
      GemmSm90Impl(ctx, p, GemmChoice{GemmFamily::kSm90}, &signal, &hook, &preemptions));
  return preemptions;
}

}  // namespace pygpukit::ops::cuda_kernels
