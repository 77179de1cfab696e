// CUDA kernels of the nn family's row ops (softmax, log_softmax, layer_norm, rms_norm):
// pgk_nn_rows_<dtype code>_v<vector>(RowsParams).
//
// One CTA per row (grid-stride over rows), blockDim a multiple of 32 picked by the host so that
// each thread holds at most kCache vectors of the row. A vector is 16 bytes (kVec elements) when
// the row length and every pointer allow it, else one element (_v1). Pipeline per row:
//   1. load: each thread reads its vectors (x, or x + residual rounded to the dtype, which is
//      also written to residual_out) into registers in the dtype, kCache of them; vectors past
//      kCache * blockDim stay in memory and are read again in each pass (from residual_out when
//      there is one, so the rounded sum is what every pass sees);
//   2. first pass: the row's maximum (softmax) or sum (layer_norm), a block reduction
//      (warp shuffles, then one value per warp through shared memory);
//   3. second pass: sum of exp(v - max), of (v - mean)^2 or of v^2, a block reduction;
//   4. write: the shared per-element formula (nn_rows.h) with weight and bias, 16 bytes a store.
// Accumulation in float (double for float64). The rows are read once from HBM when they fit the
// registers (up to kCache * kMaxThreads vectors: 32K bf16 / 16K float32 elements).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/nn/nn_rows.h"

namespace pk = pygpukit::kernels;
using pk::RowsParams;

namespace {

constexpr int kCache = 8;
// At most 512 threads a row, so that 128 registers a thread hold the cache and the unpacked
// values without spilling.
constexpr int kMaxThreads = 512;

// kVec elements of T as one aligned word of kVec * sizeof(T) bytes.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <typename T, int kVec, typename A>
__device__ __forceinline__ void Unpack(const Pack<T, kVec>& in, A (&out)[kVec]) {
#pragma unroll
  for (int e = 0; e < kVec; ++e) out[e] = pk::Cast<A>(in.v[e]);
}

template <typename T, int kVec, typename A>
__device__ __forceinline__ void LoadVec(const T* base, int64_t i, A (&out)[kVec]) {
  Unpack(reinterpret_cast<const Pack<T, kVec>*>(base)[i], out);
}

template <typename T, int kVec, typename A>
__device__ __forceinline__ void StoreVec(T* base, int64_t i, const A (&in)[kVec]) {
  Pack<T, kVec> out;
#pragma unroll
  for (int e = 0; e < kVec; ++e) out.v[e] = pk::Cast<T>(in[e]);
  reinterpret_cast<Pack<T, kVec>*>(base)[i] = out;
}

// The row's vector i as the value the op normalizes, in the dtype: x, or x + residual rounded
// to it (also written to residual_out).
template <typename T, int kVec>
__device__ __forceinline__ Pack<T, kVec> LoadRowVec(const T* x, const T* res, T* res_out,
                                                    int64_t i) {
  using A = pk::RowAcc<T>;
  Pack<T, kVec> s = reinterpret_cast<const Pack<T, kVec>*>(x)[i];
  if (res != nullptr) {
    const Pack<T, kVec> r = reinterpret_cast<const Pack<T, kVec>*>(res)[i];
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

template <typename T, int kVec>
__device__ void RowsBody(const RowsParams& p) {
  using A = pk::RowAcc<T>;
  __shared__ A scratch[33];
  const int64_t nvec = p.cols / kVec;
  const int t = threadIdx.x, threads = blockDim.x;
  const bool is_max = pk::RowFirstIsMax(p.op);
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T* x = static_cast<const T*>(p.x) + r * p.cols;
    const T* res = p.residual != nullptr ? static_cast<const T*>(p.residual) + r * p.cols : nullptr;
    T* res_out = p.residual != nullptr ? static_cast<T*>(p.residual_out) + r * p.cols : nullptr;
    // Vectors past the cache are read again per pass: from residual_out once it holds the sums.
    const T* again = res != nullptr ? res_out : x;
    // The cache holds the dtype's values (16 bytes a vector: 32 registers for kCache 8).
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
    if (p.op != pk::kRowRmsNorm) {
      auto take = [&](A u) { first = is_max ? (u > first || u != u ? u : first) : first + u; };
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
    const A a = pk::RowCenter<A>(p.op, first, p.cols);
    // Second pass.
    A sum = 0;
#pragma unroll
    for (int c = 0; c < kCache; ++c) {
      if (t + int64_t{c} * threads < nvec) {
        A u[kVec];
        Unpack(v[c], u);
#pragma unroll
        for (int e = 0; e < kVec; ++e) sum += pk::RowTerm<A>(p.op, u[e], a);
      }
    }
    for (int64_t i = t + int64_t{kCache} * threads; i < nvec; i += threads) {
      A u[kVec];
      LoadVec<T, kVec>(again, i, u);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += pk::RowTerm<A>(p.op, u[e], a);
    }
    sum = BlockReduce(sum, false, scratch);
    const A b = pk::RowScale<A>(p.op, sum, p.cols, p.eps);
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
      for (int e = 0; e < kVec; ++e) out[e] = pk::RowOut<A>(p.op, u[e], a, b, wv[e], bv[e]);
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

#define PGK_NN_ROWS(T, C, V)                                                                       \
  extern "C" __global__ void __launch_bounds__(kMaxThreads) pgk_nn_rows_##C##_v##V(RowsParams p) { \
    RowsBody<T, V>(p);                                                                             \
  }

PGK_NN_ROWS(float, f4, 4)
PGK_NN_ROWS(float, f4, 1)
PGK_NN_ROWS(double, f8, 2)
PGK_NN_ROWS(double, f8, 1)
PGK_NN_ROWS(pygpukit::float16, f2, 8)
PGK_NN_ROWS(pygpukit::float16, f2, 1)
PGK_NN_ROWS(pygpukit::bfloat16, bf2, 8)
PGK_NN_ROWS(pygpukit::bfloat16, bf2, 1)
