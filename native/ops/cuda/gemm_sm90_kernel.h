// Hopper GEMM (sm_90a): D = epilogue(A @ B) for bf16 / fp16 inputs with fp32 accumulation, and
// for float32 inputs read as TF32 (K-major A and B only: tf32 wgmma has no transpose).
//
// Design (one CTA per SM, persistent):
//   * Block tile 128 x BN x 64 (BN = 256 or 128; x 32 for tf32: the same 128 bytes of K).
//     384 threads = 3 warpgroups: warpgroup 0 is the
//     producer (one thread issues TMA copies; the group gives registers back with setmaxnreg),
//     warpgroups 1 and 2 are consumers, each owning 64 rows of the tile and issuing
//     wgmma.m64nBNk16 (k8 for tf32) with both operands in shared memory (accumulators: BN / 2
//     fp32 registers per thread).
//   * Pipeline: kStages shared-memory stages, each holding a 128 x 64 A tile and a BN x 64 B tile
//     (x 32 for tf32)
//     in the 128-byte-swizzled layout TMA writes and wgmma reads. Per stage, a `full` mbarrier
//     (TMA transaction bytes) and an `empty` mbarrier (one arrive per consumer warp once its
//     wgmmas have read the stage). Consumers keep one wgmma group in flight: a stage is
//     released when the next stage's group has been issued and the previous one retired.
//   * Tiles are walked in a grouped order (group_m tile rows at a time, column by column) so
//     that concurrently running CTAs share A rows and B columns in L2. The producer runs ahead
//     into the next tile while consumers run the epilogue.
//   * Operand layouts: A is K-major (row-major) or M-major (a transposed view); B is K-major
//     (B^T row-major, the linear-layer weight) or N-major (row-major). MN-major operands are
//     loaded as 64-element-wide boxes and read with wgmma's transpose bit, so no copy is made.
//   * Tails: TMA zero-fills out-of-bounds rows / columns / K, and the epilogue masks stores. A
//     consumer whose 64 rows lie wholly past M (skinny products) keeps the pipeline turning but
//     issues no wgmma and writes nothing.
//   * Split-K (p.splits > 1, where the last wave would leave SMs idle): the tiles of the full
//     waves run whole, then each later tile as (tile, split) units of split_kblocks k-blocks.
//     Each consumer writes its 64 x BN float32 partial block (rows past M skipped) to the
//     workspace and counts itself in at its tile half's counter; the last to arrive adds all
//     the splits' blocks in split order (so the bits do not depend on arrival order) and runs
//     the epilogue.
//   * Epilogue: plain 16-bit results are staged in shared memory and leave through asynchronous
//     TMA stores (EpilogueTma), so the consumers start the next tile at once; the rest go
//     straight from the accumulator registers, through the shared GEMM epilogue (alpha,
//     beta * C, bias, activation) when one is requested.
//
// Kernels compiled for other archs keep an empty body; the host launches them only on SM 9.x
// devices from images built for sm_90a. gemm_sm90_128x256.cu and gemm_sm90_128x128.cu
// instantiate the kernels (two files so that they compile in parallel).
#pragma once

#include <cuda.h>  // CUtensorMap (a plain 128-byte struct): no driver calls here
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/cuda/wgmma_sm90.h"
#include "ops/kernels/gemm_epilogue.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PGK_SM90A 1
#else
#define PGK_SM90A 0
#endif

namespace pk = pygpukit::kernels;

namespace {

constexpr int kBM = 128;  // tile rows: two consumer warpgroups of 64
// K extent of a stage: one 128-byte swizzle row (64 16-bit or 32 float32 elements). Every
// k-step (k16 for 16-bit, k8 for tf32) advances 32 bytes, so the byte geometry below is the same
// for all input dtypes.
template <typename In>
constexpr int kBK = 128 / static_cast<int>(sizeof(In));
constexpr int kThreads = 384;
constexpr int kConsumerWarps = 8;
constexpr uint32_t kBox = 64 * 64 * 2;  // bytes of one 64 x 64 MN-major TMA box
// Epilogue staging for TMA stores: per consumer warpgroup two 64 x 64 16-bit slabs (a slab is
// written while the previous one is still being read by its store).
constexpr uint32_t kSlab = 64 * 64 * 2;
constexpr uint32_t kEpilogueBytes = 2 * 2 * kSlab;

template <int BN>
struct Config {
  static constexpr int kStages = BN == 256 ? 4 : 6;  // ~192 KiB of operand stages either way
  static constexpr uint32_t kABytes = kBM * 128;
  static constexpr uint32_t kBBytes = BN * 128;
  static constexpr uint32_t kStageBytes = kABytes + kBBytes;
};

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void MbarInit(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SmemAddr(bar)), "r"(count));
}

__device__ __forceinline__ void MbarExpectTx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SmemAddr(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void MbarArrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(SmemAddr(bar)) : "memory");
}

__device__ __forceinline__ void MbarWait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(SmemAddr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// 3-D tiled TMA load (inner coordinate first) completing on `bar`.
__device__ __forceinline__ void TmaLoad(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                        int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Multicast variant: the box lands at the same shared-memory offset in every CTA of `mask` and
// completes on each one's barrier at `bar`'s offset.
__device__ __forceinline__ void TmaLoadMulticast(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                 int c0, int c1, int c2, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

// Arrives on the mbarrier at `bar`'s offset in CTA `cta` of the cluster.
__device__ __forceinline__ void MbarArriveCluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(SmemAddr(bar)),
      "r"(cta)
      : "memory");
}

// 3-D tiled TMA store of the box at `src` (committed as its own bulk group).
__device__ __forceinline__ void TmaStore(const CUtensorMap* map, const void* src, int c0, int c1,
                                         int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
      "cp.async.bulk.commit_group;" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(SmemAddr(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Named barrier over one warpgroup (id 0 is __syncthreads').
__device__ __forceinline__ void WarpgroupBarrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

__device__ __forceinline__ uint32_t ClusterRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// wgmma shared-memory matrix descriptor for a 128-byte-swizzled operand. K-major: rows of 128
// bytes, 8-row groups 1024 bytes apart (SBO); LBO unused. MN-major: 64-element MN chunks
// `lbo` bytes apart, 8-row K groups 1024 bytes apart.
__device__ __forceinline__ uint64_t Desc(const void* smem, uint32_t lbo) {
  uint64_t addr = SmemAddr(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

template <int N>
__device__ __forceinline__ void FenceAcc(float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

template <typename In, int BN, int TA, int TB>
__device__ __forceinline__ void Mma(float (&acc)[BN / 2], uint64_t da, uint64_t db, int scale) {
  if constexpr (std::is_same_v<In, float>) {
    static_assert(TA == 0 && TB == 0, "tf32 wgmma reads K-major operands only");
    if constexpr (BN == 256) {
      pygpukit::sm90::Wgmma256Tf32(acc, da, db, scale);
    } else {
      pygpukit::sm90::Wgmma128Tf32(acc, da, db, scale);
    }
  } else if constexpr (BN == 256 && std::is_same_v<In, __nv_bfloat16>) {
    pygpukit::sm90::Wgmma256Bf16<TA, TB>(acc, da, db, scale);
  } else if constexpr (BN == 256) {
    pygpukit::sm90::Wgmma256F16<TA, TB>(acc, da, db, scale);
  } else if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    pygpukit::sm90::Wgmma128Bf16<TA, TB>(acc, da, db, scale);
  } else {
    pygpukit::sm90::Wgmma128F16<TA, TB>(acc, da, db, scale);
  }
}

struct Tile {
  int64_t batch;
  int m0, n0;
};

// Grouped tile order: group_m tile rows are walked column by column, so the CTAs resident at
// one time touch few distinct A and B panels.
// With clusters, a "tile" here is the cluster's: kCluster CTA tiles stacked along M.
template <int kCluster>
__device__ __forceinline__ Tile TileOf(const pk::GemmParams& p, int64_t t, int BN, uint32_t rank) {
  const int64_t per_batch = int64_t(p.tiles_m) * p.tiles_n;
  Tile tile;
  tile.batch = t / per_batch;
  const int64_t r = t - tile.batch * per_batch;
  const int64_t group = int64_t(p.group_m) * p.tiles_n;
  const int first_m = static_cast<int>(r / group) * p.group_m;
  const int rows = min(p.tiles_m - first_m, p.group_m);
  const int64_t in_group = r % group;
  tile.m0 = (first_m + static_cast<int>(in_group % rows)) * kBM * kCluster + rank * kBM;
  tile.n0 = static_cast<int>(in_group / rows) * BN;
  return tile;
}

// One work unit of the persistent grid: the first p.dp_tiles tiles run whole, then each later
// tile as p.splits consecutive units, one per K range (see GemmParams).
struct Unit {
  int64_t tile;  // in tile order (TileOf)
  int split;     // 0 for a whole tile
  int kb_begin;  // k-blocks [kb_begin, kb_end)
  int kb_end;
};

__device__ __forceinline__ Unit UnitOf(const pk::GemmParams& p, int64_t t, int kblocks) {
  if (p.splits <= 1 || t < p.dp_tiles) return Unit{t, 0, 0, kblocks};
  const int64_t u = t - p.dp_tiles;
  const int split = static_cast<int>(u % p.splits);
  const int begin = split * p.split_kblocks;
  return Unit{p.dp_tiles + u / p.splits, split, begin, min(kblocks, begin + p.split_kblocks)};
}

template <typename Out>
__device__ __forceinline__ void StorePair(Out* dst, float x, float y) {
  if constexpr (std::is_same_v<Out, float>) {
    *reinterpret_cast<float2*>(dst) = make_float2(x, y);
  } else if constexpr (std::is_same_v<Out, pygpukit::bfloat16>) {
    *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(x, y);
  } else {
    *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(x, y);
  }
}

template <typename Out>
__device__ __forceinline__ Out ToOut(float v) {
  if constexpr (std::is_same_v<Out, float>) {
    return v;
  } else {
    return Out(v);
  }
}

template <typename Out>
__device__ __forceinline__ uint32_t Pack(float x, float y) {
  uint32_t u;
  if constexpr (std::is_same_v<Out, pygpukit::bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    memcpy(&u, &v, 4);
  } else {
    __half2 v = __floats2half2_rn(x, y);
    memcpy(&u, &v, 4);
  }
  return u;
}

// Writes one consumer warpgroup's 64 x BN accumulator block. Thread (warp w, lane l) holds, for
// each 8-column group j, rows w*16 + l/4 (+8) and columns 8j + 2(l%4) (+1).
template <typename Out, int BN>
__device__ __forceinline__ void Epilogue(const pk::GemmParams& p, const float (&acc)[BN / 2],
                                         const Tile& tile, int consumer) {
  const int t = threadIdx.x % 128;
  const int row0 = tile.m0 + consumer * 64 + (t / 32) * 16 + (t % 32) / 4;
  const int col0 = tile.n0 + (t % 4) * 2;
  Out* d = static_cast<Out*>(p.d) + tile.batch * p.d_batch;
  const bool plain =
      p.alpha == 1.0 && p.beta == 0.0 && p.bias == nullptr && p.activation == pk::kActNone;
  const bool paired = plain && (p.d_row % 2) == 0 &&
                      (reinterpret_cast<uintptr_t>(p.d) % (2 * sizeof(Out))) == 0 &&
                      (p.d_batch % 2) == 0;
  const bool full = int64_t{tile.m0} + kBM <= p.m && int64_t{tile.n0} + BN <= p.n;
  if (paired && full) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = row0 + 8 * h;
        StorePair(d + row * p.d_row + col0 + 8 * j, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row0 + 8 * h;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t col = col0 + 8 * j + e;
        if (row < p.m && col < p.n) {
          float v = acc[4 * j + 2 * h + e];
          if (!plain) v = pk::GemmEpilogueValue<float, Out>(p, v, tile.batch, row, col);
          d[row * p.d_row + col] = ToOut<Out>(v);
        }
      }
    }
  }
}

// Plain 16-bit output through TMA stores: the warpgroup's 64 x BN block leaves as 64 x 64 slabs
// staged in shared memory in the 128-byte-swizzled layout (16-byte chunk c of row r sits at
// chunk c ^ (r % 8), which also makes the fragment writes bank-conflict free). The stores run
// asynchronously while the warpgroup starts the next tile; TMA clips rows / columns past the
// matrix, so tails need no masking. `staging` holds two slabs used alternately: before one is
// rewritten, the store issued from it two slabs ago must have finished reading it.
template <typename Out, int BN>
__device__ __forceinline__ void EpilogueTma(const CUtensorMap* tma_d, const float (&acc)[BN / 2],
                                            const Tile& tile, int consumer, uint8_t* staging) {
  const int t = threadIdx.x % 128;
  const int lane = t % 32;
  const int row_base = (t / 32) * 16 + lane / 4;
#pragma unroll
  for (int slab = 0; slab < BN / 64; ++slab) {
    uint8_t* buf = staging + (slab & 1) * kSlab;
    if (t == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    WarpgroupBarrier(1 + consumer);
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const int j = slab * 8 + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row_base + 8 * h;
        const uint32_t off = row * 128 + ((jj ^ (row & 7)) << 4) + (lane % 4) * 4;
        const uint32_t v = Pack<Out>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(SmemAddr(buf + off)), "r"(v) : "memory");
      }
    }
    // Generic-proxy writes must be visible to the async proxy (TMA) before the store reads them.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    WarpgroupBarrier(1 + consumer);
    if (t == 0) {
      TmaStore(tma_d, buf, tile.n0 + 64 * slab, tile.m0 + 64 * consumer,
               static_cast<int>(tile.batch));
    }
  }
}

// Split-K: writes this unit's partial sums and reports whether it arrived last at its tile
// half; the last one returns with the total of every split in `acc`. Partial blocks are
// row-major 64 x BN float32, one per split, for each 64-row half of each tile; `rows` (1..64) of
// the half lie inside the matrix, and only those are written and read. Blocks are written and
// read through L2 (st/ld.global.cg), so nothing stale sits in L1.
template <int BN>
__device__ __forceinline__ bool SplitReduce(const pk::GemmParams& p, float (&acc)[BN / 2],
                                            int64_t half, int split, int rows, int consumer,
                                            volatile int* last) {
  // Read here, not hoisted above the main loop: the compiler would keep these per-thread
  // offsets live across it and spill them.
  uint32_t tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  const int t = static_cast<int>(tid % 128);
  const int row0 = (t / 32) * 16 + (t % 32) / 4;
  const int col0 = (t % 4) * 2;
  float* blocks = p.partials + half * p.splits * (64 * BN);
  float* mine = blocks + int64_t{split} * (64 * BN);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row < rows) {
        __stcg(reinterpret_cast<float2*>(mine + row * BN + 8 * j + col0),
               make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
      }
    }
  }
  // Release / acquire through one thread (the semaphore pattern): the barrier orders the
  // warpgroup's stores before thread 0's device-scope fence and arrival; after the arrival that
  // completes the count, its second fence orders the other splits' stores before the
  // warpgroup's reads, which the second barrier publishes with the flag.
  WarpgroupBarrier(1 + consumer);
  if (t == 0) {
    __threadfence();
    const int arrived = atomicAdd(p.counters + half, 1);
    __threadfence();
    *last = arrived == p.splits - 1;
  }
  WarpgroupBarrier(1 + consumer);
  if (!*last) return false;
    // Eight column groups at a time: 16 loads in flight per thread without crowding out the
    // accumulators.
#pragma unroll
  for (int j0 = 0; j0 < BN / 8; j0 += 8) {
    for (int s = 0; s < p.splits; ++s) {
      const float* block = blocks + int64_t{s} * (64 * BN);
#pragma unroll
      for (int j = j0; j < j0 + 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 8 * h;
          if (row < rows) {
            const float2 v =
                __ldcg(reinterpret_cast<const float2*>(block + row * BN + 8 * j + col0));
            // Split 0 starts the sum, so the total is ((p0 + p1) + p2) + ... whoever adds it.
            acc[4 * j + 2 * h] = s == 0 ? v.x : acc[4 * j + 2 * h] + v.x;
            acc[4 * j + 2 * h + 1] = s == 0 ? v.y : acc[4 * j + 2 * h + 1] + v.y;
          }
        }
      }
    }
  }
  return true;
}

template <typename In, typename Out, int BN, int TA, int TB, int kCluster>
__device__ __forceinline__ void GemmBody(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                         const CUtensorMap* tma_d, const pk::GemmParams& p,
                                         int tma_store) {
#if PGK_SM90A
  using Cfg = Config<BN>;
  constexpr int kStages = Cfg::kStages;
  extern __shared__ uint8_t smem_raw[];
  // 128-byte swizzle atoms repeat every 1024 bytes: stages must start on that boundary.
  uint8_t* smem =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* stage_a = smem;
  uint8_t* stage_b = smem + kStages * Cfg::kABytes;
  uint8_t* staging = smem + kStages * Cfg::kStageBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(staging + kEpilogueBytes);
  uint64_t* empty = full + kStages;
  int* last_arrival = reinterpret_cast<int*>(empty + kStages);  // per consumer (split-K)

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      MbarInit(&full[s], 1);
      // Every consumer warp of the cluster releases the stage: peers multicast into it.
      MbarInit(&empty[s], kConsumerWarps * kCluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if constexpr (kCluster > 1) ClusterSync();  // peers' barriers exist before anyone signals them
  const uint32_t rank = kCluster > 1 ? ClusterRank() : 0;
  const int64_t first = blockIdx.x / kCluster, step = gridDim.x / kCluster;

  // Work units (UnitOf): whole tiles, then (tile, split) pairs, the splits of a tile adjacent
  // so that they run together.
  const int64_t tiles = int64_t(p.tiles_m) * p.tiles_n * p.batch;
  const int64_t total = p.splits > 1 ? p.dp_tiles + (tiles - p.dp_tiles) * p.splits : tiles;
  constexpr int BK = kBK<In>;
  const int kblocks = static_cast<int>((p.k + BK - 1) / BK);
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      // The descriptors live in kernel parameter space: fetch them before the first copy needs
      // them.
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_a)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_b)) : "memory");
      if (tma_store) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_d))
                     : "memory");
      }
    }
    int stage = 0;
    uint32_t phase = 0;
    for (int64_t t = first; threadIdx.x == 0 && t < total; t += step) {
      const Unit unit = UnitOf(p, t, kblocks);
      const Tile tile = TileOf<kCluster>(p, unit.tile, BN, rank);
      const int ba = p.a_batch != 0 ? static_cast<int>(tile.batch) : 0;
      const int bb = p.b_batch != 0 ? static_cast<int>(tile.batch) : 0;
      for (int kb = unit.kb_begin; kb < unit.kb_end; ++kb) {
        MbarWait(&empty[stage], phase ^ 1);
        MbarExpectTx(&full[stage], Cfg::kStageBytes);
        uint8_t* a = stage_a + stage * Cfg::kABytes;
        uint8_t* b = stage_b + stage * Cfg::kBBytes;
        const int k0 = kb * BK;
        if constexpr (TA == 0) {
          TmaLoad(a, tma_a, &full[stage], k0, tile.m0, ba);
        } else {
#pragma unroll
          for (int j = 0; j < kBM / 64; ++j) {
            TmaLoad(a + j * kBox, tma_a, &full[stage], tile.m0 + 64 * j, k0, ba);
          }
        }
        if constexpr (kCluster > 1) {
          // Each CTA fetches its share of the B tile and multicasts it to the whole cluster.
          constexpr uint16_t kAll = (1u << kCluster) - 1;
          if constexpr (TB == 0) {
            constexpr int kRows = BN / kCluster;
            TmaLoadMulticast(b + rank * kRows * 128, tma_b, &full[stage], k0,
                             tile.n0 + rank * kRows, bb, kAll);
          } else {
            constexpr int kBoxes = BN / 64 / kCluster;
#pragma unroll
            for (int j = rank * kBoxes; j < (rank + 1) * kBoxes; ++j) {
              TmaLoadMulticast(b + j * kBox, tma_b, &full[stage], tile.n0 + 64 * j, k0, bb, kAll);
            }
          }
        } else if constexpr (TB == 0) {
          TmaLoad(b, tma_b, &full[stage], k0, tile.n0, bb);
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) {
            TmaLoad(b + j * kBox, tma_b, &full[stage], tile.n0 + 64 * j, k0, bb);
          }
        }
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int consumer = warpgroup - 1;
    const bool arrive = threadIdx.x % 32 == 0;
    // A: the consumer's 64 rows start 64 rows (K-major) or one 64-wide box (M-major) in.
    const uint32_t a_offset = consumer * (TA == 0 ? 64 * 128 : kBox);
    // Per-k16 step inside a stage: 32 bytes along a K-major row, 16 rows of an MN-major box.
    constexpr uint32_t kStepA = TA == 0 ? 32 : 16 * 128;
    constexpr uint32_t kStepB = TB == 0 ? 32 : 16 * 128;
    float acc[BN / 2];
    int stage = 0;
    uint32_t phase = 0;
    // Releases a stage to every producer that writes into it.
    auto release = [&](int s) {
      if (!arrive) return;
      if constexpr (kCluster > 1) {
#pragma unroll
        for (uint32_t cta = 0; cta < kCluster; ++cta) MbarArriveCluster(&empty[s], cta);
      } else {
        MbarArrive(&empty[s]);
      }
    };
    for (int64_t t = first; t < total; t += step) {
      const Unit unit = UnitOf(p, t, kblocks);
      const Tile tile = TileOf<kCluster>(p, unit.tile, BN, rank);
      // A half wholly past M: the pipeline still turns (the producer counts on every consumer
      // warp's release) but no wgmma is issued.
      const bool active = int64_t{tile.m0} + consumer * 64 < p.m;
      int prev = -1;
      for (int kb = unit.kb_begin; kb < unit.kb_end; ++kb) {
        MbarWait(&full[stage], phase);
        if (active) {
          const uint8_t* a = stage_a + stage * Cfg::kABytes + a_offset;
          const uint8_t* b = stage_b + stage * Cfg::kBBytes;
          FenceAcc(acc);
          asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
          for (int kk = 0; kk < 4; ++kk) {
            Mma<In, BN, TA, TB>(acc, Desc(a + kk * kStepA, kBox), Desc(b + kk * kStepB, kBox),
                                (kb != unit.kb_begin) | (kk != 0));
          }
          asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
          asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
          FenceAcc(acc);
        }
        if (prev >= 0) release(prev);
        prev = stage;
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      FenceAcc(acc);
      release(prev);
      if (!active) continue;
      if (p.splits > 1 && t >= p.dp_tiles) {
        // Recomputed here rather than kept live across the main loop (register pressure).
        const Unit u = UnitOf(p, t, kblocks);
        const int64_t rows = p.m - (int64_t{tile.m0} + consumer * 64);
        if (!SplitReduce<BN>(p, acc, (u.tile - p.dp_tiles) * 2 + consumer, u.split,
                             rows < 64 ? static_cast<int>(rows) : 64, consumer,
                             last_arrival + consumer)) {
          continue;
        }
      }
      if constexpr (sizeof(Out) == 2) {
        if (tma_store) {
          EpilogueTma<Out, BN>(tma_d, acc, tile, consumer, staging + consumer * 2 * kSlab);
          continue;
        }
      }
      Epilogue<Out, BN>(p, acc, tile, consumer);
    }
    // Shared memory must outlive the reads of the last stores.
    if (tma_store && threadIdx.x % 128 == 0) {
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
  }
  // Peers may still multicast into this CTA or arrive on its barriers until they are done.
  // (Warp 0 diverged around the producer loop: reconverge it for the aligned barrier.)
  __syncwarp();
  if constexpr (kCluster > 1) ClusterSync();
#else
  (void)tma_a;
  (void)tma_b;
  (void)tma_d;
  (void)p;
  (void)tma_store;
#endif
}

}  // namespace

// pgk_gemm_sm90_128x<BN>[_c2]_<A layout><B layout>_<in>_<out>: _c2 runs in clusters of two CTAs
// (stacked along M) sharing each B tile through TMA multicast; A layout k (K-major) or m
// (M-major); B layout k (K-major, B^T row-major) or n (N-major, row-major). Float32 inputs (TF32)
// come in the kk layout only.
#define PGK_SM90_KERNEL(BN, CL, SUFFIX, LA, LB, TA, TB, IN, INC, OUT, OUTC)                     \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                     \
      pgk_gemm_sm90_128x##BN##SUFFIX##_##LA##LB##_##INC##_##OUTC(                               \
          const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b, \
          const __grid_constant__ CUtensorMap tma_d, const pk::GemmParams p, int tma_store) {   \
    GemmBody<IN, OUT, BN, TA, TB, CL>(&tma_a, &tma_b, &tma_d, p, tma_store);                    \
  }

#define PGK_SM90_LAYOUTS(BN, CL, SUFFIX, IN, INC, OUT, OUTC)      \
  PGK_SM90_KERNEL(BN, CL, SUFFIX, k, k, 0, 0, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, SUFFIX, k, n, 0, 1, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, SUFFIX, m, k, 1, 0, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, SUFFIX, m, n, 1, 1, IN, INC, OUT, OUTC)

#define PGK_SM90_TYPES(BN, CL, SUFFIX)                                          \
  PGK_SM90_LAYOUTS(BN, CL, SUFFIX, __nv_bfloat16, bf2, pygpukit::bfloat16, bf2) \
  PGK_SM90_LAYOUTS(BN, CL, SUFFIX, __nv_bfloat16, bf2, float, f4)               \
  PGK_SM90_LAYOUTS(BN, CL, SUFFIX, __half, f2, pygpukit::float16, f2)           \
  PGK_SM90_LAYOUTS(BN, CL, SUFFIX, __half, f2, float, f4)                       \
  PGK_SM90_KERNEL(BN, CL, SUFFIX, k, k, 0, 0, float, f4, float, f4)
