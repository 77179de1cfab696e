// Fused attention forward for SM80+ (FlashAttention-2 style, inference):
// pgk_attn_sm80_<dtype code>_d<D>(AttnParams), 16-bit q / k / v, head dim D = 64 or 128.
//
// One CTA per (64 query rows, KV head, batch); 4 warps, each owning 16 query rows. The rows are
// those of the G = Hq / Hk query heads that share the KV head, packed: row r is query r % Sq of
// head (kv head) * G + r / Sq, so a decode step's G single-token heads fill one tile and read
// their K and V once (not G times, on 16-row tiles of 15 padding rows).
//   * Q's tile is loaded once; K and V stream through shared memory in tiles of 64 keys, two or
//     three stages deep (cp.async: the next tiles' copies are in flight while this one is used).
//     Rows are D / 8 chunks of 16 bytes, chunk c of row r stored at c ^ (r % 8), so the
//     ldmatrix phases (8 rows of one chunk column) hit distinct banks. Rows past the sequence
//     are zero-filled.
//   * S = Q K^T with mma.sync m16n8k16 (Q fragments kept in registers, K fragments by ldmatrix
//     from the key rows), scaled by scale * log2(e); keys past Sk, past the causal diagonal
//     (bottom-right aligned) get -inf, an additive mask is added.
//   * Online softmax in registers: per row the running maximum and sum; the tile's
//     probabilities exp2(s - max) become the A fragments of P V directly (the accumulator
//     layout of two 8-key tiles is the A layout of one 16-key step), rounded to the inputs'
//     dtype; V fragments by ldmatrix.trans.
//   * Causal: tiles wholly past the block's last row's diagonal are skipped. Only edge tiles
//     (past Sk, crossing a live row's diagonal) and masked ones test keys one by one.
//   * Warps whose 16 rows are all padding (decode's G rows in a 64-row tile) only load.
//   * At the end O / sum (0 for a row with no key), rounded, stored from registers.
//   * Split-KV (p.splits > 1, when the row blocks alone leave SMs idle: decode of few long
//     sequences): the splits of a row block take consecutive shares of its key tiles and write
//     their unnormalized rows, maxima and sums; pgk_attn_combine_* merges them.
// Launch contract (attention_cuda.cc): grid (ceil(G * Sq / 64), Hk, B), 128 threads, dynamic shared
// memory (1 + 2 * stages) * 64 * D * 2 bytes; q, k, v 16-byte aligned with row / head / batch
// strides multiples of 8 elements, unit stride along D; Hq a multiple of Hk.
#include <cfloat>
#include <cstdint>

#include "core/scalar_types.h"
#include "ops/kernels/mma_sm80.h"
#include "ops/nn/cuda/attention_device.h"
#include "ops/nn/nn_attention.h"

namespace pk = pygpukit::kernels;
using pk::AttnParams;
using pk::attn::Exp2;
using pk::attn::Pack2;
using pk::attn::QuadMax;
using pk::attn::QuadSum;
using namespace pk::sm80;  // NOLINT(build/namespaces): the PTX wrappers

namespace {

constexpr int kBM = 64, kBN = 64, kThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

// Byte offset of 16-byte chunk c of row r in a tile of D-element rows.
template <int D>
__device__ __forceinline__ uint32_t Off(int r, int c) {
  return static_cast<uint32_t>((r * (D / 8) + (c ^ (r & 7))) * 16);
}

// Rows [row0, row0 + 64) into a tile: row `row`'s D elements start at row_start(row) (Q's
// packed rows, a head's K or V rows, a paged cache's rows through the block table); rows past
// rows_end are zero-filled and row_start is not called for them (no byte read, no table read).
// `any` is a readable 16-byte-aligned address for those copies.
template <int D, typename T, typename RowStart>
__device__ __forceinline__ void LoadRows(uint32_t tile, int64_t row0, int64_t rows_end,
                                         const T* any, RowStart row_start) {
  constexpr int kC = D / 8;
#pragma unroll
  for (int i = threadIdx.x; i < kBN * kC; i += kThreads) {
    const int r = i / kC, c = i % kC;
    const bool ok = row0 + r < rows_end;
    CpAsync16(tile + Off<D>(r, c), ok ? row_start(row0 + r) + c * 8 : any, ok ? 16 : 0);
  }
}

// The K and V tiles of the kBN keys from row0 of a paged cache: key j is row j % block_size
// of block table[j / block_size] (ids clamped to the pool). A thread copies one 16-byte column
// of every (kThreads / kC)-th row: it divides once per tile, steps its block and row, and reads
// all its rows' block ids before the first copy (one table latency per tile instead of one per
// row; 64-bit divisions per copy made paged loads several times slower than contiguous ones).
template <int D, typename T>
__device__ __forceinline__ void LoadKvPaged(uint32_t ktile, uint32_t vtile, int64_t row0,
                                            int64_t rows_end, const T* k, const T* v,
                                            const int64_t* table, const AttnParams& p) {
  constexpr int kC = D / 8, kStep = kThreads / kC, kRows = kBN / kStep;
  static_assert(kThreads % kC == 0 && kBN % kStep == 0);
  const int c = threadIdx.x % kC, r0 = threadIdx.x / kC;
  int64_t blk = (row0 + r0) / p.block_size, off = (row0 + r0) % p.block_size;
  int64_t id[kRows], row[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    row[i] = off;
    id[i] = row0 + r0 + i * kStep < rows_end ? table[blk] : 0;  // (ids checked by the op)
    for (off += kStep; off >= p.block_size; off -= p.block_size) ++blk;
  }
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const bool ok = row0 + r0 + i * kStep < rows_end;
    const int64_t b = id[i] < 0 ? 0 : (id[i] >= p.num_blocks ? p.num_blocks - 1 : id[i]);
    const uint32_t o = Off<D>(r0 + i * kStep, c);
    CpAsync16(ktile + o, ok ? k + b * p.k_b + row[i] * p.k_s + c * 8 : k, ok ? 16 : 0);
    CpAsync16(vtile + o, ok ? v + b * p.v_b + row[i] * p.v_s + c * 8 : v, ok ? 16 : 0);
  }
}

// kStages: K / V tiles in flight (2, or 3 where two CTAs of that size still fit a SM: more
// bytes in flight for decode, which streams the cache).
template <typename T, int D, int kStages>
__device__ __forceinline__ void AttnBody(const AttnParams& p) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kTile = kBN * D * 2;  // bytes of one Q, K or V tile (kBM == kBN)
  constexpr int kND = D / 8;          // 8-column tiles of O
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tig = lane % 4;
  const int split = static_cast<int>(blockIdx.x % p.splits);
  const int64_t rb = blockIdx.x / p.splits;  // row block
  const int64_t q0 = rb * kBM, hk = blockIdx.y, b = blockIdx.z;
  const int64_t group = p.hq / p.hk, rows_total = group * p.sq;
  const int64_t h0 = hk * group;  // the group's first query head
  const T* q = static_cast<const T*>(p.q) + b * p.q_b + h0 * p.q_h;
  // A paged cache's blocks are found through the table (k_b / v_b are then block strides).
  const bool paged = p.block_table != nullptr;
  const T* k = static_cast<const T*>(p.k) + (paged ? 0 : b * p.k_b) + hk * p.k_h;
  const T* v = static_cast<const T*>(p.v) + (paged ? 0 : b * p.v_b) + hk * p.v_h;
  const int64_t* table = paged ? p.block_table + b * p.table_stride : nullptr;
  const int64_t skb = p.seq_lens != nullptr ? p.seq_lens[b] : p.sk;  // this sequence's keys
  auto load_kv = [&](uint32_t ktile, uint32_t vtile, int64_t row0) {
    if (paged) {
      LoadKvPaged<D>(ktile, vtile, row0, skb, k, v, table, p);
    } else {
      LoadRows<D>(ktile, row0, skb, k, [&](int64_t j) { return k + j * p.k_s; });
      LoadRows<D>(vtile, row0, skb, v, [&](int64_t j) { return v + j * p.v_s; });
    }
  };
  const uint32_t sq = SmemAddr(smem), sk = sq + kTile, sv = sk + kStages * kTile;
  // Keys this block's rows can see: causal stops after the diagonal of its latest query (the
  // last row's, or sq - 1 when the rows run into another head).
  int64_t kend = skb;
  if (p.causal) {
    const int64_t last_row = (q0 + kBM < rows_total ? q0 + kBM : rows_total) - 1;
    const int64_t latest = q0 / p.sq == last_row / p.sq ? last_row % p.sq : p.sq - 1;
    const int64_t last = latest + 1 + skb - p.sq;  // one past its last key
    kend = last < kend ? last : kend;
  }
  const int all_tiles = kend > 0 ? static_cast<int>((kend + kBN - 1) / kBN) : 0;
  // This split's share of the key tiles: [t_begin, ntiles).
  const int per_split = (all_tiles + p.splits - 1) / p.splits;
  const int t_begin = split * per_split;
  const int ntiles = t_begin + per_split < all_tiles ? t_begin + per_split : all_tiles;
  // Packed row r of the group: query r % sq of head h0 + r / sq.
  LoadRows<D>(sq, q0, rows_total, q,
              [&](int64_t r) { return q + (r / p.sq) * p.q_h + (r % p.sq) * p.q_s; });
  // Prologue: Q with the first tile, then the next kStages - 2 tiles, a commit group each
  // (empty past the last tile, so that the waits below count alike).
  if (t_begin < ntiles) {
    load_kv(sk, sv, int64_t{t_begin} * kBN);
  }
  CpAsyncCommit();
#pragma unroll
  for (int i = 1; i < kStages - 1; ++i) {
    if (t_begin + i < ntiles) {
      load_kv(sk + i * kTile, sv + i * kTile, int64_t{t_begin + i} * kBN);
    }
    CpAsyncCommit();
  }
  float o[kND][4];
#pragma unroll
  for (int d = 0; d < kND; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  uint32_t qf[D / 16][4];
  const int mi = lane / 8, ri = lane % 8;  // this lane's ldmatrix row address: matrix, row
  // This thread's two rows (g and g + 8 of the warp's 16): query index, inside the matrix, and
  // their mask rows (packed: head h0 + row / sq), computed once.
  int64_t qi[2], mask_row[2];
  bool live[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int64_t row = q0 + warp * 16 + g + 8 * hh;
    qi[hh] = row % p.sq;
    live[hh] = row < rows_total;
    mask_row[hh] = b * p.m_b + (h0 + row / p.sq) * p.m_h + qi[hh] * p.m_q;
  }
  // A warp whose 16 rows are all past the packed rows (decode: G rows in a 64-row tile) only
  // helps load; its math would be thrown away.
  const bool warp_live = q0 + warp * 16 < rows_total;
  // The lowest causal limit of this thread's live rows: a key tile at or below it needs no
  // per-key test.
  int64_t diag = INT64_MAX;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    if (live[hh] && qi[hh] + skb - p.sq < diag) diag = qi[hh] + skb - p.sq;
  }
  for (int t = t_begin; t < ntiles; ++t) {
    const uint32_t st = ((t - t_begin) % kStages) * kTile;
    // Tile t + kStages - 1 into the stage tile t - 1 used (released by the last barrier).
    if (t + kStages - 1 < ntiles) {
      const uint32_t next = ((t - t_begin + kStages - 1) % kStages) * kTile;
      load_kv(sk + next, sv + next, int64_t{t + kStages - 1} * kBN);
    }
    CpAsyncCommit();
    CpAsyncWait<kStages - 1>();  // tile t's group (and Q's) is done
    __syncthreads();
    if (warp_live) {
      if (t == t_begin) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          LdMatrixX4(qf[kk], sq + Off<D>(warp * 16 + ri + (mi & 1) * 8, kk * 2 + (mi >> 1)));
        }
      }
      // S = Q K^T: 16 rows x 64 keys per warp.
      float s[kBN / 8][4];
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < kBN / 16; ++np) {
          uint32_t r[4];
          LdMatrixX4(r, sk + st + Off<D>(np * 16 + ri + (mi >> 1) * 8, kk * 2 + (mi & 1)));
          const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          Mma16816<T>(s[2 * np], qf[kk], b0);
          Mma16816<T>(s[2 * np + 1], qf[kk], b1);
        }
      }
      // Scale, mask, online softmax (rows g and g + 8 of the warp's 16). Tiles wholly inside the
      // keys and the causal limit without a mask (all but the edges) skip the per-key tests.
      const int64_t key0 = int64_t{t} * kBN, key_last = key0 + kBN - 1;
      const bool plain = key_last < skb && (!p.causal || key_last <= diag) && p.mask == nullptr;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float mx = -INFINITY;
        if (plain) {
#pragma unroll
          for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              s[n][2 * hh + e] *= p.scale_log2;
              mx = fmaxf(mx, s[n][2 * hh + e]);
            }
          }
        } else {
#pragma unroll
          for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int64_t key = key0 + n * 8 + 2 * tig + e;
              float x = s[n][2 * hh + e] * p.scale_log2;
              if (key >= skb || (p.causal && key > qi[hh] + skb - p.sq)) {
                x = -INFINITY;
              } else if (p.mask != nullptr && live[hh]) {
                // -inf stays exact; finite values saturate at the float range, so a row masked
                // with finfo.min (as Hugging Face pads) keeps equal finite scores, as unfused.
                const float mv = p.mask[mask_row[hh] + key * p.m_k];
                x += mv == -INFINITY ? mv : fminf(fmaxf(mv * kLog2e, -FLT_MAX), FLT_MAX);
              }
              s[n][2 * hh + e] = x;
              mx = fmaxf(mx, x);
            }
          }
        }
        mx = QuadMax(mx);
        const float m_new = fmaxf(m_run[hh], mx);
        const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet: all 0
        const float corr = Exp2(m_run[hh] - base);
        m_run[hh] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pr = Exp2(s[n][2 * hh + e] - base);
            s[n][2 * hh + e] = pr;
            sum += pr;
          }
        }
        l_run[hh] = l_run[hh] * corr + sum;
#pragma unroll
        for (int d = 0; d < kND; ++d) {
          o[d][2 * hh] *= corr;
          o[d][2 * hh + 1] *= corr;
        }
      }
      // O += P V: P's accumulators are the A fragments of 16-key steps.
#pragma unroll
      for (int j = 0; j < kBN / 16; ++j) {
        const uint32_t a[4] = {
            Pack2<T>(s[2 * j][0], s[2 * j][1]), Pack2<T>(s[2 * j][2], s[2 * j][3]),
            Pack2<T>(s[2 * j + 1][0], s[2 * j + 1][1]), Pack2<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
#pragma unroll
        for (int dp = 0; dp < kND / 2; ++dp) {
          uint32_t r[4];
          LdMatrixX4Trans(r, sv + st + Off<D>(j * 16 + ri + (mi & 1) * 8, dp * 2 + (mi >> 1)));
          const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          Mma16816<T>(o[2 * dp], a, b0);
          Mma16816<T>(o[2 * dp + 1], a, b1);
        }
      }
    }
    __syncthreads();  // the next iteration's copies overwrite this stage
  }
  CpAsyncWait<0>();
  if (p.splits > 1) {  // this split's unnormalized rows, maxima and sums for the combine kernel
    const int64_t unit = ((b * p.hk + hk) * p.row_blocks + rb) * p.splits + split;
    float* po = p.partial_o + unit * kBM * D;
    float* pml = p.partial_ml + unit * kBM * 2;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float l = QuadSum(l_run[hh]);
      const int r = warp * 16 + g + 8 * hh;
      if (q0 + r >= rows_total) continue;  // padding rows: the combine kernel skips them
      if (tig == 0) {
        pml[2 * r] = m_run[hh];
        pml[2 * r + 1] = l;
      }
#pragma unroll
      for (int d = 0; d < kND; ++d) {
        *reinterpret_cast<float2*>(po + r * D + d * 8 + 2 * tig) =
            make_float2(o[d][2 * hh], o[d][2 * hh + 1]);
      }
    }
    return;
  }
  T* out = static_cast<T*>(p.o) + b * p.o_b;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float l = QuadSum(l_run[hh]);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // no key: zeros, as torch
    const int64_t row = q0 + warp * 16 + g + 8 * hh;
    if (row >= rows_total) continue;
    uint32_t* dst =
        reinterpret_cast<uint32_t*>(out + (h0 + row / p.sq) * p.o_h + (row % p.sq) * p.o_s);
#pragma unroll
    for (int d = 0; d < kND; ++d) {
      dst[(d * 8 + 2 * tig) / 2] = Pack2<T>(o[d][2 * hh] * inv, o[d][2 * hh + 1] * inv);
    }
  }
}

// Merges the splits of one row block (grid as the main kernel's without the split factor;
// 128 threads): row r's output is sum_s o_s exp2(m_s - M) / sum_s l_s exp2(m_s - M) with M the
// largest m_s (0 for a row with no key), in split order (the same bits run to run).
template <typename T, int D>
__device__ __forceinline__ void CombineBody(const AttnParams& p) {
  const int64_t rb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int64_t group = p.hq / p.hk, rows_total = group * p.sq, h0 = hk * group;
  const int64_t unit0 = ((b * p.hk + hk) * p.row_blocks + rb) * p.splits;
  T* out = static_cast<T*>(p.o) + b * p.o_b;
  for (int i = threadIdx.x; i < kBM * D / 2; i += kThreads) {
    const int r = i / (D / 2), d = (i % (D / 2)) * 2;
    const int64_t row = rb * kBM + r;
    if (row >= rows_total) continue;
    float mx = -INFINITY;
    for (int s = 0; s < p.splits; ++s) mx = fmaxf(mx, p.partial_ml[((unit0 + s) * kBM + r) * 2]);
    const float base = mx == -INFINITY ? 0.0f : mx;
    float l = 0.0f, o0 = 0.0f, o1 = 0.0f;
    for (int s = 0; s < p.splits; ++s) {
      const float* ml = p.partial_ml + ((unit0 + s) * kBM + r) * 2;
      const float w = exp2f(ml[0] - base);
      const float2 po =
          *reinterpret_cast<const float2*>(p.partial_o + ((unit0 + s) * kBM + r) * D + d);
      l += ml[1] * w;
      o0 += po.x * w;
      o1 += po.y * w;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    T* dst = out + (h0 + row / p.sq) * p.o_h + (row % p.sq) * p.o_s + d;
    *reinterpret_cast<uint32_t*>(dst) = Pack2<T>(o0 * inv, o1 * inv);
  }
}

}  // namespace

// pgk_attn_sm80_<code>_d<D> (two stages) and ..._s3 (three).
#define PGK_ATTN_SM80(T, C, D)                                                                    \
  extern "C" __global__ void __launch_bounds__(kThreads) pgk_attn_sm80_##C##_d##D(AttnParams p) { \
    AttnBody<T, D, 2>(p);                                                                         \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(kThreads)                                          \
      pgk_attn_sm80_##C##_d##D##_s3(AttnParams p) {                                               \
    AttnBody<T, D, 3>(p);                                                                         \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(kThreads)                                          \
      pgk_attn_combine_##C##_d##D(AttnParams p) {                                                 \
    CombineBody<T, D>(p);                                                                         \
  }

PGK_ATTN_SM80(pygpukit::bfloat16, bf2, 64)
PGK_ATTN_SM80(pygpukit::bfloat16, bf2, 128)
PGK_ATTN_SM80(pygpukit::float16, f2, 64)
PGK_ATTN_SM80(pygpukit::float16, f2, 128)
