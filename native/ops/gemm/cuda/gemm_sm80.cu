// SM80 tensor-core GEMM family: mma.sync (fp32 accumulate), ldmatrix fragment loads and a
// cp.async multistage pipeline. Runs on every SM80+ GPU (the SM90 family is faster on Hopper).
//
// Symbols: pgk_gemm_sm80_<BM>x<BN>_<layout>_<in code>_<out code>, one GemmParams argument.
// Inputs f2 / bf2 (m16n8k16) and f4 (run as TF32 on m16n8k8); outputs as inputs, or f4.
// Layout letters follow the BLAS / cuBLAS column-major convention, A first then B:
//   tn: A row-major (a_col == 1), B stored as B^T row-major (b_row == 1; leading stride b_col):
//       both K-contiguous, the linear-layer weight case.
//   tt: A row-major (a_col == 1), B row-major (b_col == 1; leading stride b_row).
// Launch contract (gemm_sm80_cuda.cc): grid.x = tiles_m * tiles_n (< 2^31), grid.y <= 65535
// strides over batches, block = 32 * warps, dynamic shared memory as kSmemBytes (checked here);
// A and B 16-byte aligned with leading and batch strides multiples of 16 bytes; k < 2^31.
// M, N and K are otherwise arbitrary: edge and K-tail chunks use the cp.async src-size operand
// (zero fill), so no load leaves the operands, and stores are bounds-checked.
#include <cstdint>

#include "core/scalar_types.h"
#include "ops/gemm/gemm_epilogue.h"
#include "ops/gemm/gemm_params.h"
#include "ops/kernels/mma_sm80.h"

namespace pk = pygpukit::kernels;
using pk::GemmParams;
using pygpukit::bfloat16;
using pygpukit::float16;

namespace {

// ---- PTX wrappers (ops/kernels/mma_sm80.h, and one more) --------------------------------------

using namespace pygpukit::kernels::sm80;  // NOLINT(build/namespaces): the PTX wrappers

__device__ __forceinline__ uint32_t LdShared32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ uint32_t ToTf32(uint32_t f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(f)));
  return r;
}

// ---- Per-input-type traits -------------------------------------------------------------------

// kBK keeps a smem row of A at 64 bytes for every type (32 halves or 16 floats), so the tile
// shapes, chunk counts and swizzles below are the same for 16-bit and tf32 kernels.
template <typename In>
struct InTraits;

template <>
struct InTraits<float16> {
  static constexpr int kBK = 32, kMmaK = 16;
  __device__ __forceinline__ static void Mma(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
    Mma16816<float16>(d, a, b);
  }
};

template <>
struct InTraits<bfloat16> {
  static constexpr int kBK = 32, kMmaK = 16;
  __device__ __forceinline__ static void Mma(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
    Mma16816<bfloat16>(d, a, b);
  }
};

// float inputs run as TF32 on m16n8k8, rounded to nearest (ties away: cvt.rna, available on
// every SM80+ arch) rather than truncated by the tensor core.
template <>
struct InTraits<float> {
  static constexpr int kBK = 16, kMmaK = 8;
  __device__ __forceinline__ static void Mma(float (&d)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(ToTf32(a[0])), "r"(ToTf32(a[1])), "r"(ToTf32(a[2])), "r"(ToTf32(a[3])),
          "r"(ToTf32(b[0])), "r"(ToTf32(b[1])));
  }
};

// ---- Tile configurations ---------------------------------------------------------------------

// kStages-deep cp.async ring: stages-1 k-tiles are in flight while one is multiplied, which
// covers DRAM latency at 16 KiB (large) / 8 KiB (small) per stage. The large tile takes 68 KiB
// (the epilogue's padded accumulator tile outgrows the 64 KiB ring), so two CTAs fit per SM on
// A100 / H100 and one on SM86 / SM89.
template <int BM_, int BN_, int kWarpsM_, int kWarpsN_, int kStages_, int kMinBlocks_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
  static constexpr int kStages = kStages_;
  static constexpr int kMinBlocks = kMinBlocks_;  // CTAs per SM the register budget is set for
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;  // warp tile
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must hold whole m16 / n16 blocks");
};
// 128x128 with 8 warps of 64x32: 64 accumulators per thread, so 2 CTAs/SM stay within the
// register file; used when the grid of large tiles fills the GPU.
using TileLarge = Tile<128, 128, 2, 4, 4, 2>;
// 64x64 with 4 warps of 32x32: four times as many CTAs for small or skinny problems.
using TileSmall = Tile<64, 64, 2, 2, 4, 4>;

// ---- Shared-memory swizzles ------------------------------------------------------------------

// Tiles are rows of 16-byte chunks. An ldmatrix phase reads one chunk column of 8 consecutive
// rows and the tf32 B loads read 4 rows x 8 floats; XORing the chunk index with low row bits
// spreads both over all 32 banks without padding:
//   4 chunks / row (64 B): rows r, r+1 share a 128 B line, so XOR with (r >> 1) & 3.
//   >= 8 chunks / row: XOR with r & 7 (ldmatrix), or with (r & 3) << 1 for the tf32 B loads,
//   whose 4 rows each touch 2 adjacent chunks.
enum class Swz { kLdm, kTf32RowB };

template <int kCpr, Swz kMode>
__device__ __forceinline__ int SwizzleChunk(int r, int c) {
  if constexpr (kCpr == 4) {
    static_assert(kMode == Swz::kLdm, "tf32 row-major B tiles have >= 8 chunks per row");
    return c ^ ((r >> 1) & 3);
  } else {
    static_assert(kCpr % 8 == 0, "rows must be 64 B or a multiple of 128 B");
    return kMode == Swz::kLdm ? (c ^ (r & 7)) : (c ^ ((r & 3) << 1));
  }
}

// ---- Global -> shared tile loaders -----------------------------------------------------------

// A tile of kRows rows x kCpr 16-byte chunks whose rows run along the contiguous dimension of a
// global matrix: A (rows = M, chunks along K), B^T for "tn" (rows = N, chunks along K) and B for
// "tt" (rows = K, chunks along N). Thread tid owns chunk column tid % kCpr of rows
// tid / kCpr + i * kRowStep; kRowStep is a multiple of 8, so the swizzle is the same for all i.
// The loader keeps a running pointer and 32-bit masks, so issuing a k-tile costs a few integer
// ops per copy.
template <typename In, int kRows, int kCpr, Swz kMode, int kThreads, bool kRowsAreK, int kBK>
struct TileLoader {
  static constexpr int kElems = 16 / sizeof(In);  // elements per chunk
  static constexpr int kRowStep = kThreads / kCpr;
  static constexpr int kIters = kRows / kRowStep;
  static_assert(kThreads % kCpr == 0 && kRows % kRowStep == 0 && kRowStep % 8 == 0,
                "chunks must divide evenly over threads");

  const In* ptr;  // first owned chunk of the next k-tile (past the matrix when masked; unread)
  int64_t step;   // elements between owned rows
  int64_t kstep;  // elements from one k-tile to the next
  // Packed to save registers: bits 0-15 the swizzled byte offset of the first owned chunk in a
  // stage, 16-23 its K offset in a k-tile (element, or row when kRowsAreK), 24-31 for kRowsAreK
  // the bytes of the chunk inside N, else bit 24 + i: owned row i is inside M / N.
  uint32_t packed;

  // rows0 / cols0: global index of tile row 0 / of the tile's first column (along the chunks);
  // ld: row stride; rows_end / cols_end: extents of those two dimensions.
  __device__ __forceinline__ TileLoader(const In* mat, int64_t rows0, int64_t cols0, int64_t ld,
                                        int64_t rows_end, int64_t cols_end, int tid) {
    const int c = tid % kCpr, r = tid / kCpr;
    step = kRowStep * ld;
    kstep = kRowsAreK ? kBK * ld : kBK;
    static_assert(kRows * kCpr * 16 <= 65536 && kBK < 256 && kIters <= 8, "packing");
    packed = static_cast<uint32_t>((r * kCpr + SwizzleChunk<kCpr, kMode>(r, c)) * 16);
    const int64_t col = cols0 + c * kElems;
    ptr = mat + (rows0 + r) * ld + col;
    if constexpr (kRowsAreK) {
      const int64_t left = (cols_end - col) * static_cast<int64_t>(sizeof(In));
      packed |= r << 16 | static_cast<uint32_t>(left < 0 ? 0 : (left > 16 ? 16 : left)) << 24;
      (void)rows_end;
    } else {
      packed |= (c * kElems) << 16;
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        packed |= static_cast<uint32_t>(rows0 + r + i * kRowStep < rows_end) << (24 + i);
      }
      (void)cols_end;
    }
  }

  // Issues the copies of the next k-tile, of which k_left (<= kBK) elements along K exist, and
  // advances to the one after. `any` is a readable address for fully masked copies.
  __device__ __forceinline__ void Load(uint32_t stage, int k_left, const void* any) {
    const uint32_t soff = packed & 0xffff;
    const int kpos = (packed >> 16) & 0xff;
    int n = static_cast<int>(packed >> 24);
    if constexpr (!kRowsAreK) {  // the K tail cuts every owned chunk at the same column
      const int left = (k_left - kpos) * static_cast<int>(sizeof(In));
      n = left < 0 ? 0 : (left > 16 ? 16 : left);
    }
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      int len = n;
      if constexpr (kRowsAreK) {
        if (kpos + i * kRowStep >= k_left) len = 0;
      } else {
        if (!((packed >> (24 + i)) & 1)) len = 0;
      }
      CpAsync16(stage + soff + i * kRowStep * kCpr * 16, len > 0 ? ptr + i * step : any, len);
    }
    ptr += kstep;
  }
};

// ---- Epilogue --------------------------------------------------------------------------------

// Row stride (floats) of the accumulator tile staged in shared memory: BN + 8 (8 mod 32 banks)
// puts the 4 rows x 4 float2 fragment writes of a half-warp on distinct banks and keeps rows
// 16-byte aligned for the float4 reads.
template <typename T>
constexpr int kAccStride = T::BN + 8;

template <typename T, int kPipeBytes>
constexpr int kSmemBytes =
    kPipeBytes > T::BM* kAccStride<T> * 4 ? kPipeBytes : T::BM* kAccStride<T> * 4;

// Writes the accumulators through shared memory so that each thread then owns 4 consecutive
// columns: global stores (and C reads when C is row-major) are coalesced, and the epilogue loop
// stays rolled, so the fused-epilogue code is emitted once instead of per fragment register.
template <typename Out, typename T, int kMT, int kNT>
__device__ __forceinline__ void StoreTile(const GemmParams& p, const float (&acc)[kMT][kNT][4],
                                          int64_t batch, int64_t m0, int64_t n0, int warp_m,
                                          int warp_n, int lane) {
  extern __shared__ __align__(128) unsigned char smem[];
  float* tile = reinterpret_cast<float*>(smem);
  constexpr int S = kAccStride<T>;
  {
    // Fragment (i, j) of a lane: rows g and g+8, columns 2t and 2t+1 (g = lane / 4, t = lane % 4).
    float* w = tile + (warp_m * T::WM + (lane >> 2)) * S + warp_n * T::WN + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        *reinterpret_cast<float2*>(w + i * 16 * S + j * 8) =
            make_float2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<float2*>(w + (i * 16 + 8) * S + j * 8) =
            make_float2(acc[i][j][2], acc[i][j][3]);
      }
  }
  __syncthreads();

  Out* d = static_cast<Out*>(p.d) + batch * p.d_batch;
  // Quads go out as one 4-element store when D keeps every quad aligned.
  const bool quad_ok = reinterpret_cast<uintptr_t>(p.d) % (4 * sizeof(Out)) == 0 &&
                       p.d_row % 4 == 0 && p.d_batch % 4 == 0;
  constexpr int kQuadsPerRow = T::BN / 4;
#pragma unroll 1
  for (int q = threadIdx.x; q < T::BM * kQuadsPerRow; q += T::kThreads) {
    const int r = q / kQuadsPerRow, c = (q % kQuadsPerRow) * 4;
    const int64_t row = m0 + r, col = n0 + c;
    if (row >= p.m || col >= p.n) continue;
    const float4 a = *reinterpret_cast<const float4*>(tile + r * S + c);
    const float av[4] = {a.x, a.y, a.z, a.w};
    Out v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // columns past N are neither read (C, bias) nor written
      v[e] = col + e < p.n ? Out(pk::GemmEpilogueValue<float, Out>(p, av[e], batch, row, col + e))
                           : Out(0.f);
    }
    Out* dst = d + row * p.d_row + col;
    if (quad_ok && col + 3 < p.n) {
      struct alignas(4 * sizeof(Out)) Quad {
        Out x[4];
      };
      *reinterpret_cast<Quad*>(dst) = Quad{{v[0], v[1], v[2], v[3]}};
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (col + e < p.n) dst[e] = v[e];
    }
  }
}

// ---- The kernel body -------------------------------------------------------------------------

// One CTA computes a BM x BN tile of D for every batch index it is given (blockIdx.y strides
// over batches, so batch counts past the 65535 grid limit still work).
template <typename In, typename Out, typename T, bool kBRowMajor>
__device__ __forceinline__ void GemmSm80(const GemmParams& p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Tr = InTraits<In>;
  constexpr int BM = T::BM, BN = T::BN, BK = Tr::kBK, WM = T::WM, WN = T::WN;
  constexpr int kStages = T::kStages, kThreads = T::kThreads;
  constexpr bool kTf32 = sizeof(In) == 4;
  constexpr int kMT = WM / 16, kNT = WN / 8;   // m16 / n8 mma tiles per warp
  constexpr int kACpr = BK * sizeof(In) / 16;  // 4: 64-byte rows
  constexpr int kBCpr = kBRowMajor ? BN * sizeof(In) / 16 : kACpr;
  constexpr int kBRows = kBRowMajor ? BK : BN;
  constexpr Swz kBSwz = kBRowMajor && kTf32 ? Swz::kTf32RowB : Swz::kLdm;
  constexpr int kABytes = BM * kACpr * 16, kBBytes = kBRows * kBCpr * 16;
  constexpr int kStageBytes = kABytes + kBBytes;
  static_assert(kACpr == 4, "A rows are 64 bytes");

  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t smem0 = SmemAddr(smem);
  {
    // The launcher restates the shared-memory size (it cannot include this file): a mismatch
    // traps instead of corrupting memory.
    uint32_t dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < kSmemBytes<T, kStages * kStageBytes>) __trap();
  }

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;

  // Grouped tile order: group_m rows of tiles are walked column by column, so the CTAs resident
  // at one time share A rows and B columns in L2.
  // 32-bit math: the host keeps tiles_m * tiles_n (and so group_m * tiles_n) below 2^31.
  int tm, tn;
  {
    const int tile = blockIdx.x;
    const int group_m = p.group_m > 0 ? p.group_m : 1;
    const int per_group = group_m * p.tiles_n;
    const int first_m = tile / per_group * group_m;
    const int rows = min(p.tiles_m - first_m, group_m);
    const int in_group = tile % per_group;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
  }
  const int64_t m0 = int64_t{tm} * BM, n0 = int64_t{tn} * BN;
  // The host keeps K below 2^31.
  const int k = static_cast<int>(p.k), ktiles = (k + BK - 1) / BK;
  const int64_t lda = p.a_row, ldb = kBRowMajor ? p.b_row : p.b_col;

  // Per-thread parts of the fragment addresses that do not depend on the stage or k-step. The
  // tile bases (multiples of 16 rows) do not change the swizzle bits, so lane bits give them.
  const uint32_t a_frag = (warp_m * WM + (lane & 15)) * (kACpr * 16);
  const int a_xor = (lane >> 1) & 3, a_chunk = lane >> 4;
  uint32_t b_frag;
  int b_xor, b_chunk;
  if constexpr (!kBRowMajor) {  // ldmatrix of n-rows: lanes 0-7 / 8-15 give k-halves of n0-7
    b_frag = (warp_n * WN + ((lane >> 4) << 3) + (lane & 7)) * (kBCpr * 16);
    b_xor = (lane >> 1) & 3;
    b_chunk = (lane >> 3) & 1;
  } else if constexpr (!kTf32) {  // ldmatrix.trans of k-rows
    b_frag = ((((lane >> 3) & 1) << 3) + (lane & 7)) * (kBCpr * 16);
    b_xor = lane & 7;
    b_chunk = warp_n * (WN / 8) + (lane >> 4);
  } else {  // plain 32-bit loads: row k = lane % 4 (+4), column n = lane / 4
    b_frag = (lane & 3) * (kBCpr * 16) + ((lane >> 2) & 3) * 4;
    b_xor = (lane & 3) << 1;
    b_chunk = warp_n * (WN / 4) + (lane >> 4);
  }

  for (int64_t batch = blockIdx.y; batch < p.batch; batch += gridDim.y) {
    const In* a = static_cast<const In*>(p.a) + batch * p.a_batch;
    const In* b = static_cast<const In*>(p.b) + batch * p.b_batch;
    TileLoader<In, BM, kACpr, Swz::kLdm, kThreads, false, BK> load_a(a, m0, 0, lda, p.m, p.k, tid);
    TileLoader<In, kBRows, kBCpr, kBSwz, kThreads, kBRowMajor, BK> load_b(
        b, kBRowMajor ? 0 : n0, kBRowMajor ? n0 : 0, ldb, kBRowMajor ? p.k : p.n,
        kBRowMajor ? p.n : p.k, tid);
    // Issues k-tile `t` into stage `st`; tiles past the end issue nothing.
    auto load = [&](int t, uint32_t st) {
      if (t < ktiles) {
        const int k_left = min(k - t * BK, BK);
        load_a.Load(st, k_left, p.a);
        load_b.Load(st + kABytes, k_left, p.b);
      }
    };

    float acc[kMT][kNT][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
      }
    }

    // Prologue: stages-1 k-tiles in flight. Every step commits a group, empty past the last
    // tile, so wait_group<kStages-2> below always means "tile kt has landed".
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st) {
      load(st, smem0 + st * kStageBytes);
      CpAsyncCommit();
    }
    for (int kt = 0, read_stage = 0; kt < ktiles; ++kt) {
      CpAsyncWait<kStages - 2>();
      // One barrier per k-tile: tile kt is visible to every warp, and every warp is done with
      // tile kt-1, whose stage ((kt - 1) mod kStages) the copies issued next overwrite.
      __syncthreads();
      load(kt + kStages - 1,
           smem0 + (read_stage == 0 ? kStages - 1 : read_stage - 1) * kStageBytes);
      CpAsyncCommit();
      const uint32_t sa = smem0 + read_stage * kStageBytes;
      const uint32_t sb = sa + kABytes;
      read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;

#pragma unroll
      for (int kk = 0; kk < BK / Tr::kMmaK; ++kk) {
        uint32_t af[kMT][4], bf[kNT][2];
        // A fragments: matrices (rows 0-7 | 8-15) x (k chunk 2kk | 2kk+1) give a0..a3 for both
        // 16-bit (8 halves per chunk) and tf32 (4 floats per chunk, one per lane quad).
#pragma unroll
        for (int i = 0; i < kMT; ++i) {
          LdMatrixX4(af[i],
                     sa + a_frag + i * 16 * (kACpr * 16) + ((((2 * kk + a_chunk) ^ a_xor)) << 4));
        }
        if constexpr (!kBRowMajor || !kTf32) {
#pragma unroll
          for (int j = 0; j < kNT; j += 2) {
            uint32_t r[4];
            if constexpr (!kBRowMajor) {
              LdMatrixX4(r,
                         sb + b_frag + j * 8 * (kBCpr * 16) + (((2 * kk + b_chunk) ^ b_xor) << 4));
            } else {
              LdMatrixX4Trans(
                  r, sb + b_frag + kk * 16 * (kBCpr * 16) + (((b_chunk + j) ^ b_xor) << 4));
            }
            bf[j][0] = r[0];
            bf[j][1] = r[1];
            bf[j + 1][0] = r[2];
            bf[j + 1][1] = r[3];
          }
        } else {
          // tf32, row-major B: b0 = B[k=t][n=g], b1 = B[k=t+4][n=g] (t = lane % 4, g = lane / 4).
#pragma unroll
          for (int j = 0; j < kNT; ++j) {
            const uint32_t chunk = ((b_chunk + 2 * j) ^ b_xor) << 4;
            const uint32_t row = sb + b_frag + kk * 8 * (kBCpr * 16) + chunk;
            bf[j][0] = LdShared32(row);
            bf[j][1] = LdShared32(row + 4 * (kBCpr * 16));
          }
        }
#pragma unroll
        for (int i = 0; i < kMT; ++i)
#pragma unroll
          for (int j = 0; j < kNT; ++j) Tr::Mma(acc[i][j], af[i], bf[j]);
      }
    }
    CpAsyncWait<0>();
    __syncthreads();  // the pipeline stages are reused below for the accumulator tile
    StoreTile<Out, T>(p, acc, batch, m0, n0, warp_m, warp_n, lane);
    __syncthreads();  // the next batch's prologue overwrites the accumulator tile
  }
#else
  __trap();  // the host never launches this family below SM80
#endif
}

}  // namespace

#define PGK_GEMM_SM80_KERNEL(TILE, TNAME, LAYOUT, BROW, IN, IC, OUT, OC)         \
  extern "C" __global__ void __launch_bounds__(TILE::kThreads, TILE::kMinBlocks) \
      pgk_gemm_sm80_##TNAME##_##LAYOUT##_##IC##_##OC(GemmParams p) {             \
    GemmSm80<IN, OUT, TILE, BROW>(p);                                            \
  }

#define PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, IN, IC, OUT, OC)     \
  PGK_GEMM_SM80_KERNEL(TILE, TNAME, tn, false, IN, IC, OUT, OC) \
  PGK_GEMM_SM80_KERNEL(TILE, TNAME, tt, true, IN, IC, OUT, OC)

#define PGK_GEMM_SM80_TYPES(TILE, TNAME)                           \
  PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, float16, f2, float16, f2)     \
  PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, float16, f2, float, f4)       \
  PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, bfloat16, bf2, bfloat16, bf2) \
  PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, bfloat16, bf2, float, f4)     \
  PGK_GEMM_SM80_LAYOUTS(TILE, TNAME, float, f4, float, f4)

PGK_GEMM_SM80_TYPES(TileLarge, 128x128)
PGK_GEMM_SM80_TYPES(TileSmall, 64x64)

#undef PGK_GEMM_SM80_TYPES
#undef PGK_GEMM_SM80_LAYOUTS
#undef PGK_GEMM_SM80_KERNEL
