// Device-side building blocks of the Hopper GEMM kernels (gemm_sm90_kernel.h): tile and stage
// constants, wgmma calls per dtype and tile width, and the persistent grid's tile order and work
// units (the shared-memory / mbarrier / TMA / cluster primitives are ops/kernels/sm90.h).
#pragma once

#include <cuda.h>  // CUtensorMap (a plain 128-byte struct): no driver calls here
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "ops/gemm/gemm_epilogue.h"
#include "ops/kernels/sm90.h"
#include "ops/kernels/wgmma_sm90.h"

namespace pk = pygpukit::kernels;

namespace {

// The Hopper primitives (ops/kernels/sm90.h).
using pygpukit::sm90::AlignSwizzle;
using pygpukit::sm90::ClusterRank;
using pygpukit::sm90::ClusterSync;
using pygpukit::sm90::Desc;
using pygpukit::sm90::FenceAcc;
using pygpukit::sm90::LdRelaxedGpu;
using pygpukit::sm90::LdVolatileShared;
using pygpukit::sm90::MbarArrive;
using pygpukit::sm90::MbarArriveCluster;
using pygpukit::sm90::MbarExpectTx;
using pygpukit::sm90::MbarInit;
using pygpukit::sm90::MbarWait;
using pygpukit::sm90::SmemAddr;
using pygpukit::sm90::StVolatileShared;
using pygpukit::sm90::TmaLoad;
using pygpukit::sm90::TmaLoadMulticast;
using pygpukit::sm90::TmaStore;
using pygpukit::sm90::WarpgroupBarrier;

constexpr int kBM = 128;  // tile rows: two consumer warpgroups of 64
// K extent of a stage: one 128-byte swizzle row (64 16-bit or 32 float32 elements). Every
// k-step (k16 for 16-bit, k8 for tf32, k32 for 8-bit floats) advances 32 bytes, so the byte
// geometry below is the same for all input dtypes.
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

template <typename In, int BN, int TA, int TB>
__device__ __forceinline__ void Mma(float (&acc)[BN / 2], uint64_t da, uint64_t db, int scale) {
  if constexpr (std::is_same_v<In, __nv_fp8_e4m3>) {
    static_assert(TA == 0 && TB == 0, "8-bit wgmma reads K-major operands only");
    if constexpr (BN == 256) {
      pygpukit::sm90::Wgmma256E4m3(acc, da, db, scale);
    } else {
      pygpukit::sm90::Wgmma128E4m3(acc, da, db, scale);
    }
  } else if constexpr (std::is_same_v<In, float>) {
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
  int64_t batch;  // a grouped product's group (its B and bias)
  int m0, n0;
  int m_end;  // rows of A and D at and past it belong to another group, or lie past M
};

// The last entry of the sorted `table[0..n]` that is <= v (table[0] <= v).
__device__ __forceinline__ int UpperIndex(const int64_t* table, int n, int64_t v) {
  int lo = 0, hi = n;  // table[lo] <= v; the answer is in [lo, hi)
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (__ldg(table + mid) <= v) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

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
  tile.m_end = static_cast<int>(p.m);
  if (p.groups > 0) {
    // Tile rows run over every group's in turn (no clusters): tile row r belongs to the group
    // whose first tile row is the last one <= r, and starts 128 rows per tile row into it. Its
    // 128 rows may reach into the next group's; those are loaded but never stored.
    const int64_t r_all = tile.m0 / kBM;
    const int g = UpperIndex(p.group_table, p.groups, r_all);
    const int64_t* rows_of = p.group_table + p.groups + 1;
    tile.batch = g;
    tile.m0 = static_cast<int>(__ldg(rows_of + g) + (r_all - __ldg(p.group_table + g)) * kBM);
    tile.m_end = static_cast<int>(__ldg(rows_of + g + 1));
  }
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

}  // namespace
