// CUDA kernels of the nn family's row ops (softmax, log_softmax, layer_norm, rms_norm):
// pgk_nn_rows_<dtype code>_o<RowOp>_v<vector>(RowsParams).
//
// One CTA per row (grid-stride over rows), blockDim a multiple of 32 picked by the host so that
// each thread holds at most kCache (kRowCache, nn_rows.h) vectors of the row. A vector is 16 bytes
// (kVec elements) when the row length and every pointer allow it, else one element (_v1). Pipeline
// per row:
//   1. load: each thread reads its vectors (x, or x + residual rounded to the dtype, which is
//      also written to residual_out) into registers in the dtype, kCache of them; vectors past
//      kCache * blockDim stay in memory and are read again in each pass (from residual_out when
//      there is one, so the rounded sum is what every pass sees);
//   2. first pass: the row's maximum (softmax) or sum (layer_norm), a block reduction
//      (warp shuffles, then one value per warp through shared memory);
//   3. second pass: sum of exp(v - max), of (v - mean)^2 or of v^2, a block reduction;
//   4. write: the shared per-element formula (nn_rows.h) with weight and bias, 16 bytes a store.
// Accumulation in float (double for float64). The rows are read once from HBM when they fit the
// registers (up to kCache * RowMaxThreads vectors: 32K bf16 / 16K float32 elements).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/nn/nn_rows.h"

namespace pk = pygpukit::kernels;
using pk::RowsParams;

namespace {

constexpr int kCache = pk::kRowCache;

// kVec elements of T as one aligned word of kVec * sizeof(T) bytes.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <typename T, int kVec, typename A>
__device__ __forceinline__ void Unpack(const Pack<T, kVec>& in, A (&out)[kVec]) {
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    if constexpr (std::is_same_v<T, pygpukit::float16>) {
      float f;  // one instruction (the generic conversion keeps NaN payloads, on a slow path)
      asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(in.v[e].bits)));
      out[e] = f;
    } else {
      out[e] = pk::Cast<A>(in.v[e]);
    }
  }
}

// Loads vector i whole (one 16-byte load for a full vector): unpacking straight from the global
// reference lets the compiler load element by element.
template <typename T, int kVec>
__device__ __forceinline__ Pack<T, kVec> LoadPack(const T* base, int64_t i) {
  using P = Pack<T, kVec>;
  if constexpr (sizeof(P) == 16) {
    const uint4 w = reinterpret_cast<const uint4*>(base)[i];
    P out;
    memcpy(&out, &w, sizeof(P));
    return out;
  } else {
    return reinterpret_cast<const P*>(base)[i];
  }
}

template <typename T, int kVec, typename A>
__device__ __forceinline__ void LoadVec(const T* base, int64_t i, A (&out)[kVec]) {
  Unpack(LoadPack<T, kVec>(base, i), out);
}

template <typename T, int kVec, typename A>
__device__ __forceinline__ void StoreVec(T* base, int64_t i, const A (&in)[kVec]) {
  Pack<T, kVec> out;
  constexpr bool kBf16 = std::is_same_v<T, pygpukit::bfloat16>;
  if constexpr ((kBf16 || std::is_same_v<T, pygpukit::float16>)&&kVec % 2 == 0) {
    // Two elements a conversion (round to nearest even; a NaN stays a NaN).
#pragma unroll
    for (int e = 0; e < kVec; e += 2) {
      uint32_t r;
      if constexpr (kBf16) {
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(in[e + 1]), "f"(in[e]));
      } else {
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(in[e + 1]), "f"(in[e]));
      }
      out.v[e] = T::FromBits(static_cast<uint16_t>(r));
      out.v[e + 1] = T::FromBits(static_cast<uint16_t>(r >> 16));
    }
  } else if constexpr (kBf16 || std::is_same_v<T, pygpukit::float16>) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      unsigned short r;
      if constexpr (kBf16) {
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(in[e]));
      } else {
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(in[e]));
      }
      out.v[e] = T::FromBits(r);
    }
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) out.v[e] = pk::Cast<T>(in[e]);
  }
  reinterpret_cast<Pack<T, kVec>*>(base)[i] = out;
}

// The row's vector i as the value the op normalizes, in the dtype: x, or x + residual rounded
// to it (also written to residual_out).
template <typename T, int kVec>
__device__ __forceinline__ Pack<T, kVec> LoadRowVec(const T* x, const T* res, T* res_out,
                                                    int64_t i) {
  using A = pk::RowAcc<T>;
  Pack<T, kVec> s = LoadPack<T, kVec>(x, i);
  if (res != nullptr) {
    const Pack<T, kVec> r = LoadPack<T, kVec>(res, i);
#pragma unroll
    for (int e = 0; e < kVec; ++e) s.v[e] = pk::Cast<T>(pk::Cast<A>(s.v[e]) + pk::Cast<A>(r.v[e]));
    reinterpret_cast<Pack<T, kVec>*>(res_out)[i] = s;
  }
  return s;
}

template <typename A>
__device__ __forceinline__ A WarpReduce(A v, bool max) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const A u = __shfl_xor_sync(0xffffffffu, v, o);
    v = max ? (u > v || u != u ? u : v) : v + u;  // a NaN wins the max (as torch)
  }
  return v;
}

// The block's reduction of v (max or sum), returned to every thread. `scratch` holds 33 values;
// the trailing barrier lets the next call reuse it.
template <typename A>
__device__ __forceinline__ A BlockReduce(A v, bool max, A* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpReduce(v, max);
  if (warps == 1) return v;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = lane < warps ? scratch[lane] : (max ? -INFINITY : A(0));
    w = WarpReduce(w, max);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const A out = scratch[32];
  __syncthreads();
  return out;
}

// kOp is the RowOp (a constant, so the formulas' op switches fold away per element).
template <typename T, int kVec, int32_t kOp>
__device__ void RowsBody(const RowsParams& p) {
  using A = pk::RowAcc<T>;
  constexpr bool kFastExp = sizeof(T) == 2;
  __shared__ A scratch[33];
  const int64_t nvec = p.cols / kVec;
  const int t = threadIdx.x, threads = blockDim.x;
  constexpr bool is_max = pk::RowFirstIsMax(kOp);
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T* x = static_cast<const T*>(p.x) + r * p.cols;
    const T* res = p.residual != nullptr ? static_cast<const T*>(p.residual) + r * p.cols : nullptr;
    T* res_out = p.residual != nullptr ? static_cast<T*>(p.residual_out) + r * p.cols : nullptr;
    // Vectors past the cache are read again per pass: from residual_out once it holds the sums.
    const T* again = res != nullptr ? res_out : x;
    // The cache holds the dtype's values (16 bytes a vector: 4 registers each).
    Pack<T, kVec> v[kCache];
#pragma unroll
    for (int c = 0; c < kCache; ++c) {
      const int64_t i = t + int64_t{c} * threads;
      if (i < nvec) v[c] = LoadRowVec<T, kVec>(x, res, res_out, i);
    }
    for (int64_t i = t + int64_t{kCache} * threads; i < nvec; i += threads) {
      LoadRowVec<T, kVec>(x, res, res_out, i);
    }
    // (Each thread reads back only the sums it wrote: the same i -> thread mapping every pass.)
    // First pass.
    A first = is_max ? -INFINITY : A(0);
    if constexpr (kOp != pk::kRowRmsNorm) {
      // The maximum ignores NaN (one instruction): a NaN still reaches every output through the
      // sum of exponentials, as torch's does. The safe softmax keeps a NaN-aware maximum, since
      // a row whose maximum is -inf is written as zeros.
      auto take = [&](A u) {
        if constexpr (!is_max) {
          first += u;
        } else if constexpr (kOp == pk::kRowSafeSoftmax) {
          first = u > first || u != u ? u : first;
        } else {
          first = fmax(first, u);
        }
      };
#pragma unroll
      for (int c = 0; c < kCache; ++c) {
        if (t + int64_t{c} * threads < nvec) {
          A u[kVec];
          Unpack(v[c], u);
#pragma unroll
          for (int e = 0; e < kVec; ++e) take(u[e]);
        }
      }
      for (int64_t i = t + int64_t{kCache} * threads; i < nvec; i += threads) {
        A u[kVec];
        LoadVec<T, kVec>(again, i, u);
#pragma unroll
        for (int e = 0; e < kVec; ++e) take(u[e]);
      }
      first = BlockReduce(first, is_max, scratch);
    }
    const A a = pk::RowCenter<A>(kOp, first, p.cols);
    // Second pass.
    A sum = 0;
#pragma unroll
    for (int c = 0; c < kCache; ++c) {
      if (t + int64_t{c} * threads < nvec) {
        A u[kVec];
        Unpack(v[c], u);
#pragma unroll
        for (int e = 0; e < kVec; ++e) sum += pk::RowTerm<A, kFastExp>(kOp, u[e], a);
      }
    }
    for (int64_t i = t + int64_t{kCache} * threads; i < nvec; i += threads) {
      A u[kVec];
      LoadVec<T, kVec>(again, i, u);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += pk::RowTerm<A, kFastExp>(kOp, u[e], a);
    }
    sum = BlockReduce(sum, false, scratch);
    const A b = pk::RowScale<A>(kOp, sum, p.cols, p.eps);
    // Write.
    const T* w = static_cast<const T*>(p.weight);
    const T* bias = static_cast<const T*>(p.bias);
    T* y = static_cast<T*>(p.y) + r * p.cols;
    auto write = [&](int64_t i, const A(&u)[kVec]) {
      A wv[kVec], bv[kVec], out[kVec];
      if (w != nullptr) {
        LoadVec<T, kVec>(w, i, wv);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) wv[e] = A(1);
      }
      if (bias != nullptr) {
        LoadVec<T, kVec>(bias, i, bv);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) bv[e] = A(0);
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        out[e] = pk::RowOut<A, kFastExp>(kOp, u[e], a, b, wv[e], bv[e]);
      StoreVec<T, kVec>(y, i, out);
    };
#pragma unroll
    for (int c = 0; c < kCache; ++c) {
      const int64_t i = t + int64_t{c} * threads;
      if (i < nvec) {
        A u[kVec];
        Unpack(v[c], u);
        write(i, u);
      }
    }
    for (int64_t i = t + int64_t{kCache} * threads; i < nvec; i += threads) {
      A u[kVec];
      LoadVec<T, kVec>(again, i, u);
      write(i, u);
    }
  }
}

}  // namespace

// One kernel per op (the op is a compile-time constant; one kernel switching over the ops let
// the register allocator squeeze one instantiation into spills; so did leaving out the minimum
// of one block a SM): pgk_nn_rows_<code>_o<op>_v<V>.
#define PGK_NN_ROWS_OP(T, C, V, O)                                              \
  extern "C" __global__ void __launch_bounds__(pk::RowMaxThreads(sizeof(T)), 1) \
      pgk_nn_rows_##C##_o##O##_v##V(RowsParams p) {                             \
    RowsBody<T, V, O>(p);                                                       \
  }
#define PGK_NN_ROWS(T, C, V) \
  PGK_NN_ROWS_OP(T, C, V, 0) \
  PGK_NN_ROWS_OP(T, C, V, 1) \
  PGK_NN_ROWS_OP(T, C, V, 2) \
  PGK_NN_ROWS_OP(T, C, V, 3) \
  PGK_NN_ROWS_OP(T, C, V, 4)
static_assert(pk::kRowSoftmax == 0 && pk::kRowLogSoftmax == 1 && pk::kRowLayerNorm == 2 &&
              pk::kRowRmsNorm == 3 && pk::kRowSafeSoftmax == 4);

PGK_NN_ROWS(float, f4, 4)
PGK_NN_ROWS(float, f4, 1)
PGK_NN_ROWS(double, f8, 2)
PGK_NN_ROWS(double, f8, 1)
PGK_NN_ROWS(pygpukit::float16, f2, 8)
PGK_NN_ROWS(pygpukit::float16, f2, 1)
PGK_NN_ROWS(pygpukit::bfloat16, bf2, 8)
PGK_NN_ROWS(pygpukit::bfloat16, bf2, 1)
