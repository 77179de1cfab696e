// CUDA-core ("SIMT") GEMM kernels for exact float32 and float64: every product is an FFMA / DFMA
// on the CUDA cores, never a tensor-core instruction, so float32 stays true FP32 (no TF32) and
// the summation order is fixed (no atomics, no split-k): results are bit-reproducible.
//
// Design (the classic register-blocked outer-product GEMM):
//   * A block computes a BM x BN tile of D for one batch index, walking k in BK-deep slices.
//   * Both operands are staged in shared memory as S[k][x] (x = m for A, n for B), i.e. A is held
//     transposed, so one k step of the inner loop reads a thread's TM values of A and TN values of
//     B as 16-byte shared loads (LDS.128) and issues TM * TN FMAs on them.
//   * A thread owns a TM x TN microtile, split into TM / V by TN / V blocks of V x V (V = values
//     per 16 bytes: 4 floats, 2 doubles) spaced TY * V rows and TX * V columns apart. The eight
//     lanes of a quarter warp share one row group and cover eight consecutive 16-byte column
//     groups, so B reads are one 128-byte wavefront and A reads a broadcast: no bank conflicts.
//   * Pipeline: two shared stages. While the block multiplies slice t out of one stage, each
//     thread's global loads of slice t + 1 are in flight into registers; it writes them to the
//     other stage after its FMAs, and one __syncthreads per slice separates the two (the stage
//     being written was last read one slice earlier, before that barrier). Interior tiles with
//     vector-friendly operands run a loop without any masks (kFast); the k % BK tail is one
//     extra masked slice after the loop, so the loop never checks k.
//   * Global loads are 16-byte vectors along the operand's contiguous dimension when its base
//     pointer, leading and batch strides allow (checked once per launch, uniformly, in the
//     kernel); tails and any other stride pattern use masked scalar loads with full strides, so
//     every layout is correct and nothing outside m x k / k x n is ever read (zero fill).
//   * Epilogue: accumulators are staged through shared memory and written by consecutive
//     threads to consecutive columns; each element goes through GemmEpilogueValue (alpha,
//     beta * C, bias, activation), the same function the CPU loop uses.
//
// Kernel symbols: pgk_gemm_simt_<BM>x<BN>_<layout>_<dtype code>. The layout letters are A then B:
// 'r' selects the load pattern for a unit column stride (row-major), 'c' for a unit row stride
// (column-major); either is correct for any strides, the host picks the one that fits best.
#include <cstdint>

#include "ops/gemm/gemm_epilogue.h"
#include "ops/gemm/gemm_params.h"

namespace pk = pygpukit::kernels;
using pk::GemmParams;

namespace {

template <typename T>
struct Vec16;
template <>
struct Vec16<float> {
  using Type = float4;
};
template <>
struct Vec16<double> {
  using Type = double2;
};

// Component i of a 16-byte vector; i is always a compile-time constant after unrolling, so the
// vector stays in registers.
template <typename T, typename Vec>
__device__ __forceinline__ T& Lane(Vec& v, int i) {
  return reinterpret_cast<T*>(&v)[i];
}
template <typename T, typename Vec>
__device__ __forceinline__ T Lane(const Vec& v, int i) {
  return reinterpret_cast<const T*>(&v)[i];
}

// One tile configuration. TX x TY threads (n by m) each own a TM x TN microtile; a warp is 8
// threads along n by 4 along m, warps are stacked along n first.
template <typename T, int BM_, int BN_, int BK_, int TM_, int TN_, int kMinBlocks_>
struct TileConfig {
  using Scalar = T;
  using Vec = typename Vec16<T>::Type;
  static constexpr int V = 16 / sizeof(T);
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int TX = BN / TN, TY = BM / TM;
  static constexpr int kThreads = TX * TY;
  static constexpr int kMinBlocks = kMinBlocks_;
  // Row pitch of a shared stage, padded by kPad = 4 elements: a warp's transposed stores of a
  // k-contiguous operand write two k rows V apart (SliceLoader), which then start 16 banks
  // apart (V * pitch = 16 mod 32 words, floats and doubles alike), so together they cover all
  // 32 banks; every row stays 16-byte aligned for the LDS.128 reads.
  static constexpr int kPad = 4;
  static constexpr int LDA = BM + kPad, LDB = BN + kPad;
  static constexpr int kStageA = BK * LDA, kStageB = BK * LDB;
  static_assert(BM % TM == 0 && BN % TN == 0, "microtile must divide the tile");
  static_assert(TM % V == 0 && TN % V == 0, "microtile is made of V x V blocks");
  static_assert(TX % 8 == 0 && TY % 4 == 0, "a warp is 8 x 4 threads");
  static_assert(BK % V == 0, "k slices hold whole 16-byte chunks");
  static_assert(2 * (kStageA + kStageB) * sizeof(T) <= 48 * 1024, "static shared memory limit");
};

// float32, large problems: 128 x 128 x 16, 256 threads, 8 x 8 floats per thread (64 FFMA per four
// LDS.128), 33 KB of shared memory; two blocks per SM (<= 128 registers per thread). BK = 16
// rather than 8 halves the per-slice overhead (barrier, global loads, stores, loop).
using F4Tile128 = TileConfig<float, 128, 128, 16, 8, 8, 2>;
// float32, problems too small to fill the GPU with 128 x 128 tiles: 64 x 64 x 16, 128 threads,
// 8 x 4 floats per thread, 17 KB; four blocks per SM.
using F4Tile64 = TileConfig<float, 64, 64, 16, 8, 4, 4>;
// float64: 64 x 64 x 8, 64 threads, 8 x 8 doubles per thread (128 accumulator registers, 64 DFMA
// per eight LDS.128), 17 KB.
using F8Tile64 = TileConfig<double, 64, 64, 8, 8, 8, 1>;
// float64, small problems: 32 x 32 x 8, 64 threads, 4 x 4 doubles per thread, 9 KB.
using F8Tile32 = TileConfig<double, 32, 32, 8, 4, 4, 4>;

// Moves BK-deep slices of one operand, viewed as X x K (x = m for A, n for B; element (x, k) at
// ptr + x * sx + k * sk), from global memory through registers into a shared stage S[k][x].
// The slice is cut into 16-byte chunks of V elements along the contiguous dimension: along k
// when kKContig (row-major A, column-major B; stored transposed, one scalar store per element)
// and along x otherwise (one 16-byte store per chunk).
//
// Chunk placement: a "line" is one x (kKContig) or one k (otherwise) of the slice. When
// kKContig, kPair = 2 neighbouring threads take the two chunks of one 32-byte sector of a line,
// so one load instruction of a warp reads 16 whole sectors, and its transposed stores touch 16
// lines in two k rows that start 16 banks apart: conflict-free (see kPad). Otherwise all
// chunks of a line go to consecutive threads (one 512-byte run per warp). A thread's further
// chunks first walk the rest of its line, then the lines kLinesPerPass further on.
template <typename T, int BX, int BK, int kThreads, bool kKContig>
struct SliceLoader {
  using Vec = typename Vec16<T>::Type;
  static constexpr int V = 16 / sizeof(T);
  static constexpr int kChunksPerLine = (kKContig ? BK : BX) / V;
  static constexpr int kLines = kKContig ? BX : BK;
  static constexpr int kPerThread = BX * BK / V / kThreads;
  static constexpr int kPair = kKContig && kChunksPerLine > 2 ? 2 : kChunksPerLine;
  static constexpr int kGroups = kChunksPerLine / kPair;  // loads per line and thread
  static constexpr int kLinesPerPass = kThreads / kPair;
  static_assert(kThreads % kPair == 0 && kPerThread % kGroups == 0 &&
                    kLinesPerPass * (kPerThread / kGroups) == kLines,
                "threads must tile the slice exactly");
  // Offsets of the thread's chunk i from its chunk 0, in lines and along the contiguous dim.
  static constexpr int LineOffset(int i) { return i / kGroups * kLinesPerPass; }
  static constexpr int RunOffset(int i) { return i % kGroups * kPair * V; }
  static constexpr int DX(int i) { return kKContig ? LineOffset(i) : RunOffset(i); }
  static constexpr int DK(int i) { return kKContig ? RunOffset(i) : LineOffset(i); }

  // Strides are passed to every call rather than kept in members: they are kernel parameters
  // (constant bank operands), so this keeps the per-thread state, and the 128-register budget of
  // the big float32 tile, small.
  const T* ptr;  // first element of the thread's first chunk in the current slice
  int x, kq;     // tile-relative coordinates of the first chunk
  int x_left;    // rows (x) of the operand inside this tile, at most BX
  bool vec;      // 16-byte global loads are legal (uniform across the grid)

  __device__ __forceinline__ void Init(const T* tile_base, int64_t sx, int64_t sk, int64_t x_extent,
                                       bool vector_ok) {
    const int line = threadIdx.x / kPair;
    const int within = (threadIdx.x % kPair) * V;
    x = kKContig ? line : within;
    kq = kKContig ? within : line;
    ptr = tile_base + x * sx + kq * sk;
    x_left = static_cast<int>(x_extent < BX ? x_extent : BX);
    vec = vector_ok;
  }

  // Loads the current slice. kFast: the whole slice is inside the operand and 16-byte loads are
  // legal, so no masks at all (the steady state of interior tiles). Otherwise each chunk is one
  // 16-byte load when legal and inside, else V masked scalar loads (zero outside). kMaskK: the
  // slice may end past k (only the last slice); k_left = k elements from the slice's start on.
  template <bool kFast, bool kMaskK>
  __device__ __forceinline__ void Load(Vec (&r)[kPerThread], int k_left, int64_t sx,
                                       int64_t sk) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const T* q = ptr + DX(i) * sx + DK(i) * sk;
      if constexpr (kFast) {
        r[i] = __ldg(reinterpret_cast<const Vec*>(q));
      } else {
        const int xi = x + DX(i), ki = kq + DK(i);
        const bool full = kKContig ? (xi < x_left && (!kMaskK || ki + V <= k_left))
                                   : (xi + V <= x_left && (!kMaskK || ki < k_left));
        if (vec && full) {
          r[i] = __ldg(reinterpret_cast<const Vec*>(q));
        } else {
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const bool ok = kKContig ? (xi < x_left && (!kMaskK || ki + v < k_left))
                                     : (xi + v < x_left && (!kMaskK || ki < k_left));
            Lane<T>(r[i], v) = ok ? __ldg(q + v * (kKContig ? sk : sx)) : T(0);
          }
        }
      }
    }
  }

  __device__ __forceinline__ void Advance(int64_t sk) { ptr += BK * sk; }

  template <int LD>
  __device__ __forceinline__ void Store(T* stage, const Vec (&r)[kPerThread]) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int xi = x + DX(i), ki = kq + DK(i);
      if constexpr (kKContig) {
#pragma unroll
        for (int v = 0; v < V; ++v) stage[(ki + v) * LD + xi] = Lane<T>(r[i], v);
      } else {
        *reinterpret_cast<Vec*>(stage + ki * LD + xi) = r[i];
      }
    }
  }
};

// The inner product of one shared stage: BK rank-1 updates of the thread's microtile.
template <typename Cfg>
__device__ __forceinline__ void MultiplyStage(const typename Cfg::Scalar* as,
                                              const typename Cfg::Scalar* bs, int tr, int tc,
                                              typename Cfg::Scalar (&acc)[Cfg::TM][Cfg::TN]) {
  using T = typename Cfg::Scalar;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V;
  // Fragments are double-buffered in registers: step kk + 1's shared loads are issued ahead of
  // step kk's FMAs to hide their latency (ptxas may hoist further when registers allow).
  Vec a[2][Cfg::TM / V], b[2][Cfg::TN / V];
  auto load = [&](int kk, int buf) {
#pragma unroll
    for (int g = 0; g < Cfg::TM / V; ++g) {
      a[buf][g] = *reinterpret_cast<const Vec*>(as + kk * Cfg::LDA + (g * Cfg::TY + tr) * V);
    }
#pragma unroll
    for (int g = 0; g < Cfg::TN / V; ++g) {
      b[buf][g] = *reinterpret_cast<const Vec*>(bs + kk * Cfg::LDB + (g * Cfg::TX + tc) * V);
    }
  };
  load(0, 0);
#pragma unroll
  for (int kk = 0; kk < Cfg::BK; ++kk) {
    if (kk + 1 < Cfg::BK) load(kk + 1, (kk + 1) & 1);
#pragma unroll
    for (int i = 0; i < Cfg::TM; ++i) {
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) {
        acc[i][j] =
            fma(Lane<T>(a[kk & 1][i / V], i % V), Lane<T>(b[kk & 1][j / V], j % V), acc[i][j]);
      }
    }
  }
}

// True when 16-byte chunks of the operand are legal loads: contiguous along the chunk direction
// (`unit` == 1), base pointer 16-byte aligned, and the stride between chunks (`lead`) and between
// batches keep that alignment. Tile and slice origins are multiples of V by construction.
template <typename T>
__device__ __forceinline__ bool VectorOk(const void* ptr, int64_t unit, int64_t lead,
                                         int64_t batch_stride, int64_t batch) {
  constexpr int V = 16 / sizeof(T);
  return unit == 1 && reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && lead % V == 0 &&
         (batch == 1 || batch_stride % V == 0);
}

// Shared memory of a block: A stages [0, 2 * kStageA), then B stages; the epilogue reuses it.
template <typename Cfg>
__device__ __forceinline__ typename Cfg::Scalar* StageA(typename Cfg::Scalar* smem, int s) {
  return smem + s * Cfg::kStageA;
}
template <typename Cfg>
__device__ __forceinline__ typename Cfg::Scalar* StageB(typename Cfg::Scalar* smem, int s) {
  return smem + 2 * Cfg::kStageA + s * Cfg::kStageB;
}

// Where a block works: one BM x BN tile of one batch. One tile per block (no persistent loop)
// keeps nothing but the pipeline live across the k loop.
struct BlockTile {
  int64_t batch, m0, n0;
};

template <int BM, int BN>
__device__ __forceinline__ BlockTile LocateTile(const GemmParams& p) {
  // Grouped order: consecutive blocks walk group_m tile rows down one column of tiles before
  // moving right, so blocks running together share A rows and B columns in L2.
  const uint32_t tiles_m = static_cast<uint32_t>(p.tiles_m);
  const uint32_t group_m = p.group_m > 0 ? static_cast<uint32_t>(p.group_m) : 1u;
  const uint32_t group_size = group_m * static_cast<uint32_t>(p.tiles_n);
  const uint32_t group = blockIdx.x / group_size, in_group = blockIdx.x % group_size;
  const uint32_t first_m = group * group_m;
  const uint32_t rows = min(tiles_m - first_m, group_m);
  BlockTile t;
  t.batch = static_cast<int64_t>(blockIdx.z) * gridDim.y + blockIdx.y;
  t.m0 = static_cast<int64_t>(first_m + in_group % rows) * BM;
  t.n0 = static_cast<int64_t>(in_group / rows) * BN;
  return t;
}

// The two operand loaders of a tile, positioned at k offset k0. A is X = m by k, k contiguous
// when row-major; B is X = n by k, k contiguous when column-major.
template <typename Cfg, bool kARow, bool kBRow>
struct TileLoaders {
  using T = typename Cfg::Scalar;
  SliceLoader<T, Cfg::BM, Cfg::BK, Cfg::kThreads, kARow> a;
  SliceLoader<T, Cfg::BN, Cfg::BK, Cfg::kThreads, !kBRow> b;

  static __device__ __forceinline__ bool VectorA(const GemmParams& p) {
    return kARow ? VectorOk<T>(p.a, p.a_col, p.a_row, p.a_batch, p.batch)
                 : VectorOk<T>(p.a, p.a_row, p.a_col, p.a_batch, p.batch);
  }
  static __device__ __forceinline__ bool VectorB(const GemmParams& p) {
    return kBRow ? VectorOk<T>(p.b, p.b_col, p.b_row, p.b_batch, p.batch)
                 : VectorOk<T>(p.b, p.b_row, p.b_col, p.b_batch, p.batch);
  }

  __device__ __forceinline__ TileLoaders(const GemmParams& p, const BlockTile& t, int64_t k0) {
    a.Init(static_cast<const T*>(p.a) + t.batch * p.a_batch + t.m0 * p.a_row + k0 * p.a_col,
           p.a_row, p.a_col, p.m - t.m0, VectorA(p));
    b.Init(static_cast<const T*>(p.b) + t.batch * p.b_batch + t.n0 * p.b_col + k0 * p.b_row,
           p.b_col, p.b_row, p.n - t.n0, VectorB(p));
  }
};

// The full BK-deep slices [0, nfull) through the two-stage pipeline. kFast: interior tile with
// 16-byte loads on both operands (no masks in the loop).
template <typename Cfg, bool kARow, bool kBRow, bool kFast>
__device__ __forceinline__ void FullSlices(const GemmParams& p, const BlockTile& tile, int nfull,
                                           typename Cfg::Scalar* smem, int tr, int tc,
                                           typename Cfg::Scalar (&acc)[Cfg::TM][Cfg::TN]) {
  using Vec = typename Cfg::Vec;
  TileLoaders<Cfg, kARow, kBRow> ld(p, tile, 0);
  Vec ra[decltype(ld.a)::kPerThread], rb[decltype(ld.b)::kPerThread];
  ld.a.template Load<kFast, false>(ra, Cfg::BK, p.a_row, p.a_col);
  ld.b.template Load<kFast, false>(rb, Cfg::BK, p.b_col, p.b_row);
  ld.a.template Store<Cfg::LDA>(StageA<Cfg>(smem, 0), ra);
  ld.b.template Store<Cfg::LDB>(StageB<Cfg>(smem, 0), rb);
  __syncthreads();
  // The last iteration reloads its own slice (the pointers stop advancing) into the idle
  // stage, which nobody reads: the loads and stores stay unconditional, so the compiler can
  // schedule them freely among the FMAs.
  for (int t = 0; t < nfull; ++t) {
    const int cur = t & 1;
    if (t + 1 < nfull) {
      ld.a.Advance(p.a_col);
      ld.b.Advance(p.b_row);
    }
    ld.a.template Load<kFast, false>(ra, Cfg::BK, p.a_row, p.a_col);
    ld.b.template Load<kFast, false>(rb, Cfg::BK, p.b_col, p.b_row);
    MultiplyStage<Cfg>(StageA<Cfg>(smem, cur), StageB<Cfg>(smem, cur), tr, tc, acc);
    ld.a.template Store<Cfg::LDA>(StageA<Cfg>(smem, cur ^ 1), ra);
    ld.b.template Store<Cfg::LDB>(StageB<Cfg>(smem, cur ^ 1), rb);
    // Publishes stage cur ^ 1 and retires stage cur, which slice t + 2 overwrites.
    __syncthreads();
  }
}

// The last k % BK values of k: one masked slice, zero-filled past k (so it adds exact zeros).
template <typename Cfg, bool kARow, bool kBRow>
__device__ __forceinline__ void PartialSlice(const GemmParams& p, const BlockTile& tile, int64_t k0,
                                             int k_left, typename Cfg::Scalar* smem, int tr, int tc,
                                             typename Cfg::Scalar (&acc)[Cfg::TM][Cfg::TN]) {
  using Vec = typename Cfg::Vec;
  TileLoaders<Cfg, kARow, kBRow> ld(p, tile, k0);
  Vec ra[decltype(ld.a)::kPerThread], rb[decltype(ld.b)::kPerThread];
  ld.a.template Load<false, true>(ra, k_left, p.a_row, p.a_col);
  ld.b.template Load<false, true>(rb, k_left, p.b_col, p.b_row);
  ld.a.template Store<Cfg::LDA>(StageA<Cfg>(smem, 0), ra);
  ld.b.template Store<Cfg::LDB>(StageB<Cfg>(smem, 0), rb);
  __syncthreads();
  MultiplyStage<Cfg>(StageA<Cfg>(smem, 0), StageB<Cfg>(smem, 0), tr, tc, acc);
  __syncthreads();
}

// Epilogue through shared memory: the accumulators go out in passes of whole "row slots" (slot i
// = row i of every thread's microtile: TY rows x BN columns), then the block walks the staged
// values in a rolled loop, consecutive threads on consecutive columns. Stores are coalesced, and
// the epilogue (alpha, beta * C, bias, activation: erf / exp) is instantiated once per pass
// instead of once per accumulator, which keeps code size and register pressure down.
template <typename Cfg>
__device__ __forceinline__ void Epilogue(const GemmParams& p, typename Cfg::Scalar* smem,
                                         const typename Cfg::Scalar (&acc)[Cfg::TM][Cfg::TN],
                                         int tr, int tc, int64_t batch, int64_t m0, int64_t n0) {
  using T = typename Cfg::Scalar;
  using Vec = typename Cfg::Vec;
  constexpr int V = Cfg::V, TM = Cfg::TM, TN = Cfg::TN, TY = Cfg::TY, BN = Cfg::BN;
  constexpr int kSlot = TY * BN;
  constexpr int kCapacity = 2 * (Cfg::kStageA + Cfg::kStageB);
  constexpr int kSlots = kCapacity / kSlot >= TM ? TM : kCapacity / kSlot >= 4 ? 4 : 2;
  static_assert(kSlots * kSlot <= kCapacity && TM % kSlots == 0, "epilogue staging");
  T* d = static_cast<T*>(p.d) + batch * p.d_batch;
#pragma unroll
  for (int pass = 0; pass < TM / kSlots; ++pass) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
#pragma unroll
      for (int g = 0; g < TN / V; ++g) {
        Vec v;
#pragma unroll
        for (int u = 0; u < V; ++u) Lane<T>(v, u) = acc[pass * kSlots + s][g * V + u];
        *reinterpret_cast<Vec*>(smem + s * kSlot + tr * BN + (g * Cfg::TX + tc) * V) = v;
      }
    }
    __syncthreads();
#pragma unroll 1
    for (int e = threadIdx.x; e < kSlots * kSlot; e += Cfg::kThreads) {
      const int i = pass * kSlots + e / kSlot;  // microtile row
      const int r = e % kSlot / BN;             // thread row
      const int64_t row = m0 + ((i / V) * TY + r) * V + i % V;
      const int64_t col = n0 + e % BN;
      if (row < p.m && col < p.n) {
        d[row * p.d_row + col] = pk::GemmEpilogueValue<T, T>(p, smem[e], batch, row, col);
      }
    }
    __syncthreads();  // the next pass overwrites the staged values
  }
}

// kARow / kBRow: the operand's load pattern assumes a unit column stride (else a unit row
// stride). See the file comment.
template <typename Cfg, bool kARow, bool kBRow>
__device__ __forceinline__ void GemmSimt(const GemmParams& p) {
  using T = typename Cfg::Scalar;
  using Loaders = TileLoaders<Cfg, kARow, kBRow>;
  __shared__ __align__(16) T smem[2 * (Cfg::kStageA + Cfg::kStageB)];

  const BlockTile tile = LocateTile<Cfg::BM, Cfg::BN>(p);
  if (tile.batch >= p.batch) return;  // the grid's batch dimensions round up

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  constexpr int kWarpsN = Cfg::TX / 8;
  const int tr = (warp / kWarpsN) * 4 + lane / 8;  // thread row in the TY x TX grid
  const int tc = (warp % kWarpsN) * 8 + lane % 8;  // thread column

  T acc[Cfg::TM][Cfg::TN];
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i) {
#pragma unroll
    for (int j = 0; j < Cfg::TN; ++j) acc[i][j] = T(0);
  }
  const int nfull = static_cast<int>(p.k / Cfg::BK);  // the host keeps k below 2^31
  if (nfull > 0) {
    if (Loaders::VectorA(p) && Loaders::VectorB(p) && tile.m0 + Cfg::BM <= p.m &&
        tile.n0 + Cfg::BN <= p.n) {
      FullSlices<Cfg, kARow, kBRow, true>(p, tile, nfull, smem, tr, tc, acc);
    } else {
      FullSlices<Cfg, kARow, kBRow, false>(p, tile, nfull, smem, tr, tc, acc);
    }
  }
  const int k_rem = static_cast<int>(p.k % Cfg::BK);
  if (k_rem > 0) {
    PartialSlice<Cfg, kARow, kBRow>(p, tile, p.k - k_rem, k_rem, smem, tr, tc, acc);
  }
  Epilogue<Cfg>(p, smem, acc, tr, tc, tile.batch, tile.m0, tile.n0);
}

}  // namespace

// One kernel per tile configuration and load pattern (A then B: r = unit column stride,
// c = unit row stride).
#define PGK_SIMT_KERNEL(CFG, TILE, LAYOUT, A_ROW, B_ROW, CODE)                 \
  extern "C" __global__ void __launch_bounds__(CFG::kThreads, CFG::kMinBlocks) \
      pgk_gemm_simt_##TILE##_##LAYOUT##_##CODE(GemmParams p) {                 \
    GemmSimt<CFG, A_ROW, B_ROW>(p);                                            \
  }
#define PGK_SIMT_KERNELS(CFG, TILE, CODE)           \
  PGK_SIMT_KERNEL(CFG, TILE, rr, true, true, CODE)  \
  PGK_SIMT_KERNEL(CFG, TILE, rc, true, false, CODE) \
  PGK_SIMT_KERNEL(CFG, TILE, cr, false, true, CODE) \
  PGK_SIMT_KERNEL(CFG, TILE, cc, false, false, CODE)

PGK_SIMT_KERNELS(F4Tile128, 128x128, f4)
PGK_SIMT_KERNELS(F4Tile64, 64x64, f4)
PGK_SIMT_KERNELS(F8Tile64, 64x64, f8)
PGK_SIMT_KERNELS(F8Tile32, 32x32, f8)

#undef PGK_SIMT_KERNELS
#undef PGK_SIMT_KERNEL
