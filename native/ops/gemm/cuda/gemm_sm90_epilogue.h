// Epilogues of the Hopper GEMM kernels (gemm_sm90_kernel.h): accumulator fragments to D through
// shared-memory slabs and TMA stores (16-bit output in the inputs' dtype, fused or not) or
// registers (float32 output, a D TMA cannot write), and the split-K reduction of partial sums.
#pragma once

#include "ops/gemm/cuda/gemm_sm90_device.h"

namespace {

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

// float -> Out and Out -> float through the conversion instructions alone: the storage types'
// own conversions keep NaN payloads through a slow path that, inlined for each of a tile's
// values, swells the code (a NaN stays a NaN here; its payload is not kept, as in the packed
// conversions of the TMA-store path).
template <typename Out>
__device__ __forceinline__ Out ToOut(float v) {
  if constexpr (std::is_same_v<Out, float>) {
    return v;
  } else if constexpr (std::is_same_v<Out, pygpukit::bfloat16>) {
    return Out::FromBits(__bfloat16_as_ushort(__float2bfloat16_rn(v)));
  } else {
    return Out::FromBits(__half_as_ushort(__float2half_rn(v)));
  }
}

template <typename T>
__device__ __forceinline__ float AsFloat(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, pygpukit::bfloat16>) {
    return __bfloat162float(__ushort_as_bfloat16(x.bits));
  } else {
    return __half2float(__ushort_as_half(x.bits));
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

// The activation, out of line. Inlined into every one of the 128 values a thread writes per
// tile (with the erf, tanh and exp forms of every activation behind one runtime switch), it made
// each 16-bit kernel about 650 KiB of code, most of it the epilogue, which then ran at the speed
// of instruction-cache misses (a fused bias alone tripled the product's time).
__device__ __noinline__ float ActivateOutlined(float x, int32_t act) {
  return pk::GemmActivate(x, act);
}

// Whether anything beyond storing the accumulator applies: alpha, beta * C, a bias, an
// activation, or an 8-bit product's scales.
__device__ __forceinline__ bool HasEpilogue(const pk::GemmParams& p) {
  return p.alpha != 1.0 || p.beta != 0.0 || p.bias != nullptr || p.activation != pk::kActNone ||
         p.scale_kind_a != pk::kScaleNone || p.scale_kind_b != pk::kScaleNone;
}

// The fused epilogue of one value held in registers: C and the bias read and added inline, the
// activation called (GemmEpilogueValue's logic, with the activation out of line).
// kScaled (the 8-bit kernels only): the scales of the product first, as they dequantize the
// product itself. A compile-time flag, so that the 16-bit kernels do not carry the scale reads
// in each of their 128 inlined values (code size again).
template <typename Out, bool kScaled>
__device__ __forceinline__ float FusedValue(const pk::GemmParams& p, float acc, int64_t batch,
                                            int64_t row, int64_t col) {
  if constexpr (kScaled) {
    if (p.scale_kind_a != pk::kScaleNone) {
      acc *= __ldg(p.scale_a + (p.scale_kind_a == pk::kScaleOuter ? row : 0));
    }
    if (p.scale_kind_b != pk::kScaleNone) {
      acc *= __ldg(p.scale_b + (p.scale_kind_b == pk::kScaleOuter ? col : 0));
    }
  }
  const float c = p.beta != 0.0 ? AsFloat(pk::GemmAddend<Out>(p, batch, row, col)) : 0.f;
  const float bias = p.bias != nullptr ? AsFloat(pk::GemmBias<Out>(p, batch, col)) : 0.f;
  const float v = pk::GemmEpilogueAffine(p, acc, c, bias);
  return p.activation != pk::kActNone ? ActivateOutlined(v, p.activation) : v;
}

// Writes one consumer warpgroup's 64 x BN accumulator block. Thread (warp w, lane l) holds, for
// each 8-column group j, rows w*16 + l/4 (+8) and columns 8j + 2(l%4) (+1).
template <typename Out, int BN, bool kScaled>
__device__ __forceinline__ void Epilogue(const pk::GemmParams& p, const float (&acc)[BN / 2],
                                         const Tile& tile, int consumer) {
  const int t = threadIdx.x % 128;
  const int row0 = tile.m0 + consumer * 64 + (t / 32) * 16 + (t % 32) / 4;
  const int col0 = tile.n0 + (t % 4) * 2;
  Out* d = static_cast<Out*>(p.d) + tile.batch * p.d_batch;
  const bool plain = !HasEpilogue(p);
  const bool paired = plain && (p.d_row % 2) == 0 &&
                      (reinterpret_cast<uintptr_t>(p.d) % (2 * sizeof(Out))) == 0 &&
                      (p.d_batch % 2) == 0;
  const bool full = int64_t{tile.m0} + kBM <= tile.m_end && int64_t{tile.n0} + BN <= p.n;
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
  // Masked stores, the plain and the fused loop apart so that each is compact code.
  if (plain) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = row0 + 8 * h;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int64_t col = col0 + 8 * j + e;
          if (row < tile.m_end && col < p.n)
            d[row * p.d_row + col] = ToOut<Out>(acc[4 * j + 2 * h + e]);
        }
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
        if (row < tile.m_end && col < p.n) {
          d[row * p.d_row + col] =
              ToOut<Out>(FusedValue<Out, kScaled>(p, acc[4 * j + 2 * h + e], tile.batch, row, col));
        }
      }
    }
  }
}

// 16-bit output in the inputs' dtype through TMA stores: the warpgroup's 64 x BN block leaves
// as 64 x 64 slabs staged in shared memory in the 128-byte-swizzled layout (16-byte chunk c of
// row r sits at chunk c ^ (r % 8), which also makes the fragment writes bank-conflict free). The
// stores run asynchronously while the warpgroup starts the next tile; TMA clips rows / columns
// past the matrix, so tails need no masking. `staging` holds two slabs used alternately: before
// one is rewritten, the store issued from it two slabs ago must have finished reading it. A fused
// epilogue (alpha, beta * C, bias, activation) is applied to each value in registers before it
// is staged, inside the matrix only (C and the bias are not read past it).
// kFused is a template parameter, not a runtime flag inside the loop: with both forms of each
// value in one unrolled loop, the plain path's few instructions per value were scattered
// between the fused ones and fetched as sparsely as they were.
template <typename Out, int BN, bool kScaled, bool kFused>
__device__ __forceinline__ void EpilogueTmaImpl(const pk::GemmParams& p, const CUtensorMap* tma_d,
                                                const float (&acc)[BN / 2], const Tile& tile,
                                                int consumer, uint8_t* staging) {
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
        float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
        if constexpr (kFused) {
          const int64_t grow = int64_t{tile.m0} + consumer * 64 + row;
          const int64_t gcol = int64_t{tile.n0} + 8 * j + (lane % 4) * 2;
          if (grow < tile.m_end && gcol < p.n) {
            v0 = FusedValue<Out, kScaled>(p, v0, tile.batch, grow, gcol);
          }
          if (grow < tile.m_end && gcol + 1 < p.n) {
            v1 = FusedValue<Out, kScaled>(p, v1, tile.batch, grow, gcol + 1);
          }
        }
        const uint32_t v = Pack<Out>(v0, v1);
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(SmemAddr(buf + off)), "r"(v) : "memory");
      }
    }
    // Generic-proxy writes must be visible to the async proxy (TMA) before the store reads them.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    WarpgroupBarrier(1 + consumer);
    if (t == 0) {
      // D of a grouped product is one matrix (tile.batch is the group).
      TmaStore(tma_d, buf, tile.n0 + 64 * slab, tile.m0 + 64 * consumer,
               p.groups > 0 ? 0 : static_cast<int>(tile.batch));
    }
  }
}

template <typename Out, int BN, bool kScaled>
__device__ __forceinline__ void EpilogueTma(const pk::GemmParams& p, const CUtensorMap* tma_d,
                                            const float (&acc)[BN / 2], const Tile& tile,
                                            int consumer, uint8_t* staging) {
  if (HasEpilogue(p)) {
    EpilogueTmaImpl<Out, BN, kScaled, true>(p, tma_d, acc, tile, consumer, staging);
  } else {
    EpilogueTmaImpl<Out, BN, kScaled, false>(p, tma_d, acc, tile, consumer, staging);
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

}  // namespace
