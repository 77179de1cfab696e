// Fused attention forward for Hopper (sm_90a; FlashAttention-3 style, inference):
// pgk_attn_sm90{,s,pp}_<dtype code>_d<D>(tq, tk, tv, AttnParams), 16-bit q / k / v, head dim
// D = 64 or 128, no mask, contiguous (unpaged) K and V. Three consumer schedules: pipelined
// (default: tile t's Q K^T and softmax under tile t - 1's P V), serial (s: one tile at a time)
// and ping-pong (pp: pipelined, and the two consumers take turns issuing their wgmmas).
//
// One CTA per (128 query rows, query head, batch); 384 threads in three warpgroups:
//   * warpgroup 0, the producer: one thread issues TMA loads (Q once; then per 128-key tile K
//     and V into a ring of kStages stages, each tile completing on its own mbarrier so that
//     Q K^T starts before V lands). It gives registers back (setmaxnreg) and waits on a stage's
//     k_empty / v_empty barrier before refilling its K / V tile.
//   * warpgroups 1 and 2, the consumers: 64 query rows each. Per key tile:
//       S (64 x 128) = Q K^T: wgmma with both operands in shared memory (K-major, 128-byte
//         swizzle, D / 16 k-steps over D / 64 slabs of 64 columns);
//       scale by scale * log2(e), per-key tests only on edge tiles (past Sk, crossing a row's
//         causal diagonal, bottom-right aligned), online softmax in registers (row maxima and
//         sums over each quad of lanes), the probabilities packed to the inputs' dtype straight
//         into wgmma's register A fragments (the accumulator layout of two 8-key columns is the
//         A layout of one 16-key step);
//       O (64 x D) = O * correction + P V: wgmma with A from registers and V as an MN-major B
//         (its D / 64 column slabs `kSlabKv` bytes apart). K's tile is released once the scores
//         are in registers, V's after P V.
//   * At the end O / sum (0 for a row with no key) is rounded and stored from registers.
// Tiles past the causal diagonal of the block's last row are neither loaded nor computed.
//
// Shared memory (1024-byte aligned for the swizzle): Q (D / 64 slabs of 128 rows x 128 bytes),
// kStages K tiles and kStages V tiles (D / 64 slabs of 128 keys x 128 bytes each), then the
// mbarriers. Launch contract (attention_sm90_cuda.cc): grid (ceil(Sq / 128), Hq, B), 384 threads,
// AttnSm90SmemBytes(D) of dynamic shared memory; tensor maps over (D, S, H, B) with boxes of 64 x
// 128 and 128-byte swizzle; Hq a multiple of Hk.
#include <cuda.h>

#include <cstdint>

#include "core/scalar_types.h"
#include "ops/kernels/sm90.h"
#include "ops/kernels/wgmma_sm90.h"
#include "ops/nn/cuda/attention_device.h"
#include "ops/nn/nn_attention.h"

namespace pk = pygpukit::kernels;
using pk::AttnParams;
using pk::attn::Exp2;
using pk::attn::Pack2;
using pk::attn::QuadMax;
using pk::attn::QuadSum;

namespace {

using pygpukit::sm90::AlignSwizzle;
using pygpukit::sm90::Desc;
using pygpukit::sm90::FenceAcc;
using pygpukit::sm90::MbarArrive;
using pygpukit::sm90::MbarExpectTx;
using pygpukit::sm90::MbarInit;
using pygpukit::sm90::MbarWait;
using pygpukit::sm90::NamedBarrierArrive;
using pygpukit::sm90::NamedBarrierSync;
using pygpukit::sm90::TmaLoad4;
using pygpukit::sm90::WgmmaCommit;
using pygpukit::sm90::WgmmaFence;
using pygpukit::sm90::WgmmaWait;

constexpr int kThreads = 384;

// The device code exists for sm_90a only (the other archs compile an empty entry).
#if PGK_SM90A
constexpr int kBM = 128, kBN = 128, kConsumerWarps = 8;

// Shared-memory geometry for head dim D.
template <int D>
struct Geometry {
  static constexpr int kStages = static_cast<int>(pk::AttnSm90Stages(D));
  static constexpr uint32_t kSlabQ = kBM * 128;     // 128 rows x 64 columns of Q
  static constexpr uint32_t kSlabKv = kBN * 128;    // 128 keys x 64 columns of K or V
  static constexpr uint32_t kQBytes = kBM * D * 2;  // D / 64 slabs
  static constexpr uint32_t kKvBytes = kBN * D * 2;
  static constexpr uint32_t kBarOffset = kQBytes + 2 * kStages * kKvBytes;
  // q_full, q_empty; k_full, v_full, k_empty and v_empty per stage; 1 KiB of alignment slack.
  static_assert(kBarOffset + (2 + 4 * kStages) * 8 + 1024 <= pk::AttnSm90SmemBytes(D));
};

// One work item: kBM query rows (from q0) of query head h of sequence b, and the key tiles
// they see (causal: up to the last row's diagonal, bottom-right aligned).
struct Work {
  int q0, h, b, hk, ntiles;
};
__device__ __forceinline__ Work DecodeWork(int64_t w, int64_t nqb, const AttnParams& p) {
  Work wk;
  const int64_t qb = w % nqb, rest = w / nqb;
  // Causal: each head's last (longest) row blocks first, so that short ones fill the tail.
  wk.q0 = static_cast<int>((p.causal ? nqb - 1 - qb : qb) * kBM);
  wk.h = static_cast<int>(rest % p.hq);
  wk.b = static_cast<int>(rest / p.hq);
  wk.hk = static_cast<int>(wk.h / (p.hq / p.hk));
  int64_t kend = p.sk;
  if (p.causal) {
    const int64_t last_row = (wk.q0 + kBM < p.sq ? wk.q0 + kBM : p.sq) - 1;
    const int64_t last = last_row + 1 + p.sk - p.sq;
    kend = last < kend ? last : kend;
  }
  wk.ntiles = kend > 0 ? static_cast<int>((kend + kBN - 1) / kBN) : 0;
  return wk;
}

// S (64 x kBN) = Q K^T for one consumer: D / 16 k-steps, 32 bytes apart inside a 64-column slab.
template <typename T, int D>
__device__ __forceinline__ void ScoreTile(float (&s)[kBN / 2], const uint8_t* q, const uint8_t* k) {
  using G = Geometry<D>;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t da = Desc(q + (kk / 4) * G::kSlabQ + (kk % 4) * 32, 0);
    const uint64_t db = Desc(k + (kk / 4) * G::kSlabKv + (kk % 4) * 32, 0);
    if constexpr (std::is_same_v<T, pygpukit::bfloat16>) {
      pygpukit::sm90::Wgmma128Bf16<0, 0>(s, da, db, kk != 0);
    } else {
      pygpukit::sm90::Wgmma128F16<0, 0>(s, da, db, kk != 0);
    }
  }
}

// O (64 x D) += P V for one consumer: kBN / 16 k-steps of 16 keys (2048 bytes of V's rows);
// V is B in MN-major form, its 64-column slabs kSlabKv bytes apart.
template <typename T, int D>
__device__ __forceinline__ void ValueTile(float (&o)[D / 2], const uint32_t (&pa)[kBN / 16][4],
                                          const uint8_t* v, bool accumulate) {
  using G = Geometry<D>;
#pragma unroll
  for (int j = 0; j < kBN / 16; ++j) {
    const uint64_t db = Desc(v + j * 16 * 128, G::kSlabKv);
    const int scale = accumulate || j != 0;
    if constexpr (D == 128 && std::is_same_v<T, pygpukit::bfloat16>) {
      pygpukit::sm90::WgmmaRs128Bf16<1>(o, pa[j], db, scale);
    } else if constexpr (D == 128) {
      pygpukit::sm90::WgmmaRs128F16<1>(o, pa[j], db, scale);
    } else if constexpr (std::is_same_v<T, pygpukit::bfloat16>) {
      pygpukit::sm90::WgmmaRs64Bf16<1>(o, pa[j], db, scale);
    } else {
      pygpukit::sm90::WgmmaRs64F16<1>(o, pa[j], db, scale);
    }
  }
}

#endif  // PGK_SM90A

// kPipelined: the consumers overlap tile t's Q K^T and softmax with tile t - 1's P V (else each
// tile runs in turn). kPingPong (pipelined only): the two consumers take turns issuing their
// wgmmas (named barriers 1 and 2), so that one's softmax runs under the other's products.
template <typename T, int D, bool kPipelined, bool kPingPong = false>
__device__ __forceinline__ void AttnSm90Body(const CUtensorMap* tq, const CUtensorMap* tk,
                                             const CUtensorMap* tv, const AttnParams& p) {
#if PGK_SM90A
  using G = Geometry<D>;
  constexpr int kStages = G::kStages;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = AlignSwizzle(smem_raw);
  uint8_t* sq = smem;
  uint8_t* sk = smem + G::kQBytes;
  uint8_t* sv = sk + kStages * G::kKvBytes;
  uint64_t* q_full = reinterpret_cast<uint64_t*>(smem + G::kBarOffset);
  uint64_t* q_empty = q_full + 1;
  uint64_t* k_full = q_full + 2;
  uint64_t* v_full = k_full + kStages;
  uint64_t* k_empty = v_full + kStages;
  uint64_t* v_empty = k_empty + kStages;

  // Work items w = blockIdx.x, blockIdx.x + gridDim.x, ... (persistent when the grid is
  // smaller than the work: the producer loads the next item's Q and K / V while the consumers
  // finish the last one's tiles and store its rows).
  const int64_t nqb = (p.sq + kBM - 1) / kBM, total = nqb * p.hq * p.batch;

  if (threadIdx.x == 0) {
    MbarInit(q_full, 1);
    MbarInit(q_empty, kConsumerWarps);
    for (int s = 0; s < kStages; ++s) {
      MbarInit(&k_full[s], 1);
      MbarInit(&v_full[s], 1);
      MbarInit(&k_empty[s], kConsumerWarps);
      MbarInit(&v_empty[s], kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (threadIdx.x == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tq)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tk)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tv)) : "memory");
      uint32_t it = 0, n = 0;  // K / V tiles and work items loaded so far
      for (int64_t w = blockIdx.x; w < total; w += gridDim.x, ++n) {
        const Work wk = DecodeWork(w, nqb, p);
        if (n > 0) MbarWait(q_empty, (n - 1) & 1);  // the last item's final Q K^T is done
        MbarExpectTx(q_full, G::kQBytes);
#pragma unroll
        for (int j = 0; j < D / 64; ++j) {
          TmaLoad4(sq + j * G::kSlabQ, tq, q_full, 64 * j, wk.q0, wk.h, wk.b);
        }
        for (int t = 0; t < wk.ntiles; ++t, ++it) {
          const int st = static_cast<int>(it % kStages);
          const uint32_t reuse = ((it / kStages) - 1) & 1;
          if (it >= kStages) MbarWait(&k_empty[st], reuse);
          uint8_t* kt = sk + st * G::kKvBytes;
          uint8_t* vt = sv + st * G::kKvBytes;
          MbarExpectTx(&k_full[st], G::kKvBytes);
#pragma unroll
          for (int j = 0; j < D / 64; ++j) {
            TmaLoad4(kt + j * G::kSlabKv, tk, &k_full[st], 64 * j, t * kBN, wk.hk, wk.b);
          }
          if (it >= kStages) MbarWait(&v_empty[st], reuse);
          MbarExpectTx(&v_full[st], G::kKvBytes);
#pragma unroll
          for (int j = 0; j < D / 64; ++j) {
            TmaLoad4(vt + j * G::kSlabKv, tv, &v_full[st], 64 * j, t * kBN, wk.hk, wk.b);
          }
        }
      }
    }
    return;
  }

  // 128 x 24 + 256 x 240 = 64512 <= 384 x 168, what __launch_bounds__(384, 1) allots (ptxas
  // reports 168 for every variant; with 232 the ping-pong variant spilled at head dim 128).
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  const int consumer = warpgroup - 1;
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  const uint8_t* q = sq + consumer * 64 * 128;  // this consumer's 64 rows of every slab
  float o[D / 2];
  uint32_t it = 0, n = 0;  // K / V tiles and work items consumed so far
  for (int64_t w = blockIdx.x; w < total; w += gridDim.x, ++n) {
    const Work wk = DecodeWork(w, nqb, p);
    const int q0 = wk.q0, h = wk.h, b = wk.b, ntiles = wk.ntiles;
    const uint32_t it0 = it;
    it += ntiles;
    // Ring stage and phase of this item's key tile t.
    auto stage = [&](int t) { return static_cast<int>((it0 + t) % kStages); };
    auto phase = [&](int t) { return ((it0 + t) / kStages) & 1; };
    // This thread's two rows (g and g + 8 of its warp's 16): query index and whether it exists.
    int64_t qi[2];
    bool live[2];
    int64_t diag = INT64_MAX;  // the lowest causal limit of its live rows
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      qi[hh] = q0 + consumer * 64 + warp * 16 + g + 8 * hh;
      live[hh] = qi[hh] < p.sq;
      if (live[hh] && qi[hh] + p.sk - p.sq < diag) diag = qi[hh] + p.sk - p.sq;
    }
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    // Tile t's scores s -> its probabilities exp2(s * scale - max) in place, the running maxima
    // and sums, and corr, the factor the output so far must be scaled by.
    auto softmax = [&](float(&s)[kBN / 2], int t, float(&corr)[2]) {
      // s[4 n + e]: row g (e < 2) or g + 8, key t * kBN + 8 n + 2 c + e % 2.
      const int64_t key0 = int64_t{t} * kBN, key_last = key0 + kBN - 1;
      if (key_last < p.sk && (!p.causal || key_last <= diag)) {
#pragma unroll
        for (int i = 0; i < kBN / 2; ++i) s[i] *= p.scale_log2;
      } else {
        // Edge tiles only: row hh sees keys key0 .. key0 + lim[hh] - 1 of this tile. The per-key
        // test is one 32-bit compare and a select (64-bit tests inside the loops compiled to a
        // branch per element, which cost more than the tile's wgmmas).
        int lim[2];
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          int64_t end = p.sk;
          if (p.causal && qi[hh] + 1 + p.sk - p.sq < end) end = qi[hh] + 1 + p.sk - p.sq;
          const int64_t n = end - key0;
          lim[hh] = n < 0 ? 0 : (n > kBN ? kBN : static_cast<int>(n));
        }
#pragma unroll
        for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float x = s[4 * n + e] * p.scale_log2;
            s[4 * n + e] = 8 * n + 2 * c + e % 2 < lim[e / 2] ? x : -INFINITY;
          }
        }
      }
      // Two partial maxima and sums per row (e), so that the chains are half as long.
      float part[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) part[e] = fmaxf(part[e], s[4 * n + e]);
      }
      float mx[2], base[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        mx[hh] = QuadMax(fmaxf(part[2 * hh], part[2 * hh + 1]));
        const float m_new = fmaxf(m_run[hh], mx[hh]);
        base[hh] = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet: all 0
        corr[hh] = Exp2(m_run[hh] - base[hh]);
        m_run[hh] = m_new;
      }
      float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float pr = Exp2(s[4 * n + e] - base[e / 2]);
          sum[e] += pr;
          s[4 * n + e] = pr;
        }
      }
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        l_run[hh] = l_run[hh] * corr[hh] + (sum[2 * hh] + sum[2 * hh + 1]);
      }
    };
    // The probabilities as wgmma A fragments in the inputs' dtype: step j covers keys 16 j ..
    // 16 j + 15, i.e. 8-key columns 2 j (a[0] row g, a[1] row g + 8) and 2 j + 1 (a[2], a[3]).
    auto pack = [&](const float(&s)[kBN / 2], uint32_t(&pa)[kBN / 16][4]) {
#pragma unroll
      for (int j = 0; j < kBN / 16; ++j) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float* pr = s + 4 * (2 * j + half);
          pa[j][2 * half] = Pack2<T>(pr[0], pr[1]);
          pa[j][2 * half + 1] = Pack2<T>(pr[2], pr[3]);
        }
      }
    };
    auto rescale = [&](const float(&corr)[2]) {
#pragma unroll
      for (int d = 0; d < D / 8; ++d) {
        o[4 * d] *= corr[0];
        o[4 * d + 1] *= corr[0];
        o[4 * d + 2] *= corr[1];
        o[4 * d + 3] *= corr[1];
      }
    };
    // K's stage is released as soon as the scores are in registers, V's after P V: the producer
    // refills K a tile's softmax earlier than with one barrier per stage.
    auto release_k = [&](int st) {
      if (lane == 0) MbarArrive(&k_empty[st]);
    };
    auto release_v = [&](int st) {
      if (lane == 0) MbarArrive(&v_empty[st]);
    };
    // Q's buffer, after the item's last Q K^T: the producer loads the next item's rows.
    auto release_q = [&] {
      if (lane == 0) MbarArrive(q_empty);
    };
    MbarWait(q_full, n & 1);
    if (ntiles == 0) release_q();
    if constexpr (!kPipelined) {
      // Each tile in turn: Q K^T, softmax, P V (the other consumer's work overlaps).
      for (int t = 0; t < ntiles; ++t) {
        const int st = stage(t);
        const uint32_t parity = phase(t);
        MbarWait(&k_full[st], parity);
        float s[kBN / 2];
        WgmmaFence();
        ScoreTile<T, D>(s, q, sk + st * G::kKvBytes);
        WgmmaCommit();
        WgmmaWait<0>();
        FenceAcc(s);
        release_k(st);
        if (t == ntiles - 1) release_q();
        float corr[2];
        softmax(s, t, corr);
        uint32_t pa[kBN / 16][4];
        pack(s, pa);
        if (t != 0) rescale(corr);
        MbarWait(&v_full[st], parity);
        FenceAcc(o);
        WgmmaFence();
        ValueTile<T, D>(o, pa, sv + st * G::kKvBytes, t != 0);
        WgmmaCommit();
        WgmmaWait<0>();
        FenceAcc(o);
        release_v(st);
      }
    } else if (ntiles > 0) {
      // Software-pipelined (FlashAttention-3's intra-warpgroup overlap): tile t's Q K^T and tile
      // t - 1's P V are in flight together, and tile t's softmax runs while P V still computes;
      // its probabilities stay in the score registers until that P V has read the previous P.
      // Ping-pong turns: a consumer waits for its barrier (1 + consumer) before issuing and
      // signals the other's after; consumer 0 goes first, and consumer 1 skips its last signal so
      // that every barrier's arrivals and waits pair up (ntiles + 1 turns each).
      auto my_turn = [&] {
        if constexpr (kPingPong) NamedBarrierSync(1 + consumer, 256);
      };
      auto pass_turn = [&](bool last) {
        if constexpr (kPingPong) {
          if (!(last && consumer == 1)) NamedBarrierArrive(2 - consumer, 256);
        }
      };
      if constexpr (kPingPong) {
        if (consumer == 1) NamedBarrierArrive(1, 256);
      }
      uint32_t pa[kBN / 16][4];
      {
        MbarWait(&k_full[stage(0)], phase(0));
        float s[kBN / 2];
        my_turn();
        WgmmaFence();
        ScoreTile<T, D>(s, q, sk + stage(0) * G::kKvBytes);
        WgmmaCommit();
        pass_turn(false);
        WgmmaWait<0>();
        FenceAcc(s);
        release_k(stage(0));
        if (ntiles == 1) release_q();
        float corr[2];
        softmax(s, 0, corr);
        pack(s, pa);
      }
      for (int t = 1; t < ntiles; ++t) {
        const int st = stage(t), st_prev = stage(t - 1);
        MbarWait(&k_full[st], phase(t));
        MbarWait(&v_full[st_prev], phase(t - 1));
        float s[kBN / 2];
        my_turn();
        FenceAcc(o);
        WgmmaFence();
        ScoreTile<T, D>(s, q, sk + st * G::kKvBytes);
        WgmmaCommit();
        WgmmaFence();  // (else ptxas injects one: its operands were set up after the first)
        ValueTile<T, D>(o, pa, sv + st_prev * G::kKvBytes, t - 1 != 0);
        WgmmaCommit();
        pass_turn(false);
        WgmmaWait<1>();  // the scores (committed first) are done
        FenceAcc(s);
        release_k(st);
        if (t == ntiles - 1) release_q();
        float corr[2];
        softmax(s, t, corr);
        WgmmaWait<0>();  // P V has read pa
        FenceAcc(o);
        release_v(st_prev);
        pack(s, pa);
        rescale(corr);
      }
      const int last = ntiles - 1, st = stage(last);
      MbarWait(&v_full[st], phase(last));
      my_turn();
      FenceAcc(o);
      WgmmaFence();
      ValueTile<T, D>(o, pa, sv + st * G::kKvBytes, last != 0);
      WgmmaCommit();
      pass_turn(true);
      WgmmaWait<0>();
      FenceAcc(o);
      release_v(st);
    }
    // O / l, rounded, from registers: o[4 d + e] is row g (e < 2) or g + 8, column 8 d + 2 c + e
    // % 2.
    T* out = static_cast<T*>(p.o) + b * p.o_b + h * p.o_h;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float l = QuadSum(l_run[hh]);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // no key: zeros, as torch
      if (!live[hh]) continue;
      uint32_t* dst = reinterpret_cast<uint32_t*>(out + qi[hh] * p.o_s);
#pragma unroll
      for (int d = 0; d < D / 8; ++d) {
        const float x0 = ntiles > 0 ? o[4 * d + 2 * hh] * inv : 0.0f;
        const float x1 = ntiles > 0 ? o[4 * d + 2 * hh + 1] * inv : 0.0f;
        dst[(8 * d + 2 * c) / 2] = Pack2<T>(x0, x1);
      }
    }
  }  // work items
#endif
}

}  // namespace

// pgk_attn_sm90_* (pipelined consumers), pgk_attn_sm90s_* (serial: one tile at a time) and
// pgk_attn_sm90pp_* (pipelined, the consumers taking turns).
#define PGK_ATTN_SM90_KERNEL(NAME, T, D, PIPELINED, PINGPONG)                              \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                \
      NAME(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk, \
           const __grid_constant__ CUtensorMap tv, const AttnParams p) {                   \
    AttnSm90Body<T, D, PIPELINED, PINGPONG>(&tq, &tk, &tv, p);                             \
  }
#define PGK_ATTN_SM90(T, C, D)                                        \
  PGK_ATTN_SM90_KERNEL(pgk_attn_sm90_##C##_d##D, T, D, true, false)   \
  PGK_ATTN_SM90_KERNEL(pgk_attn_sm90s_##C##_d##D, T, D, false, false) \
  PGK_ATTN_SM90_KERNEL(pgk_attn_sm90pp_##C##_d##D, T, D, true, true)

PGK_ATTN_SM90(pygpukit::bfloat16, bf2, 64)
PGK_ATTN_SM90(pygpukit::bfloat16, bf2, 128)
PGK_ATTN_SM90(pygpukit::float16, f2, 64)
PGK_ATTN_SM90(pygpukit::float16, f2, 128)
