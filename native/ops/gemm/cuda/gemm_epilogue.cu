// Unfused GEMM epilogue: D = act(alpha * src + beta * C + bias) elementwise, where src holds a
// plain product (float32, or float64 for float64 outputs) laid out like D. Used when the kernel
// family that computed the product cannot fuse the epilogue (cuBLASLt).
#include <cstring>

#include "ops/gemm/gemm_epilogue.h"

namespace pk = pygpukit::kernels;

namespace {

// Blocks walk the output's rows (batch, row) grid-stride, one integer division per row; a
// block's threads walk the row's columns, so the product is read and D written coalesced. The
// grid's y blocks split a row's column chunks (blockDim * kIlp elements or groups each) among
// them, so that a few long rows (a 16-row product with a 128K vocabulary) still fill the GPU.
// (Per-element 64-bit index arithmetic made the pass several times slower than its bytes.)
// Each thread loads kIlp elements of a row before it computes and stores any: with one load in
// flight per thread the pass could not keep enough bytes in flight to reach the memory's rate.
constexpr int kIlp = pk::kEpiloguePassIlp;

template <typename Src, typename Out>
__device__ __forceinline__ void Apply(const pk::GemmParams& p) {
  const int64_t rows = p.batch * p.m;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kIlp;
  for (int64_t line = blockIdx.x; line < rows; line += gridDim.x) {
    const int64_t b = line / p.m, row = line - b * p.m;
    const Src* src = static_cast<const Src*>(p.a) + b * p.a_batch + row * p.a_row;
    Out* d = static_cast<Out*>(p.d) + b * p.d_batch + row * p.d_row;
    for (int64_t col0 = blockIdx.y * step + threadIdx.x; col0 < p.n; col0 += step * gridDim.y) {
      Src v[kIlp];
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const int64_t col = col0 + u * blockDim.x;
        v[u] = col < p.n ? src[col] : Src(0);
      }
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const int64_t col = col0 + u * blockDim.x;
        if (col < p.n) {
          d[col] = static_cast<Out>(pk::GemmEpilogueValue<Src, Out>(p, v[u], b, row, col));
        }
      }
    }
  }
}

// Four output values in one store (8 bytes of 16-bit values, 16 of float32).
template <typename Out>
__device__ __forceinline__ void Store4(Out* d, const float (&r)[4]) {
  if constexpr (sizeof(Out) == 4) {
    *reinterpret_cast<float4*>(d) = make_float4(r[0], r[1], r[2], r[3]);
  } else {
    Out o[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = static_cast<Out>(r[e]);
    uint2 u;
    memcpy(&u, o, 8);
    *reinterpret_cast<uint2*>(d) = u;
  }
}

// Four consecutive values of a 16-bit or float32 row as floats (one 8- or 16-byte load).
template <typename T>
__device__ __forceinline__ void Load4(const T* x, float (&r)[4]) {
  if constexpr (sizeof(T) == 4) {
    const float4 v = *reinterpret_cast<const float4*>(x);
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
  } else {
    const uint2 u = *reinterpret_cast<const uint2*>(x);
    T t[4];
    memcpy(t, &u, 8);
#pragma unroll
    for (int e = 0; e < 4; ++e) r[e] = static_cast<float>(t[e]);
  }
}

// The same pass over rows whose float32 product, C and D hold groups of four columns in one
// aligned vector each (the host checks: n, every row stride and the batch strides multiples of
// four, 16-byte-aligned product, 8-byte-aligned D, C and bias; C with unit column stride): each
// thread moves four columns per load and store, kIlp groups in flight, and reads the product
// with streaming loads (it is read once).
template <typename Out>
__device__ __forceinline__ void ApplyVec4(const pk::GemmParams& p) {
  const int64_t rows = p.batch * p.m;
  const int64_t quads = p.n / 4;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kIlp;
  for (int64_t line = blockIdx.x; line < rows; line += gridDim.x) {
    const int64_t b = line / p.m, row = line - b * p.m;
    const float* src = static_cast<const float*>(p.a) + b * p.a_batch + row * p.a_row;
    Out* d = static_cast<Out*>(p.d) + b * p.d_batch + row * p.d_row;
    const Out* c =
        p.beta != 0.0 ? static_cast<const Out*>(p.c) + b * p.c_batch + row * p.c_row : nullptr;
    const Out* bias =
        p.bias != nullptr ? static_cast<const Out*>(p.bias) + b * p.bias_batch : nullptr;
    for (int64_t q0 = blockIdx.y * step + threadIdx.x; q0 < quads; q0 += step * gridDim.y) {
      float4 v[kIlp];
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const int64_t q = q0 + u * blockDim.x;
        v[u] = q < quads ? __ldcs(reinterpret_cast<const float4*>(src) + q)
                         : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const int64_t q = q0 + u * blockDim.x;
        if (q >= quads) continue;
        float cv[4] = {0.f, 0.f, 0.f, 0.f}, bv[4] = {0.f, 0.f, 0.f, 0.f};
        if (c != nullptr) Load4(c + 4 * q, cv);
        if (bias != nullptr) Load4(bias + 4 * q, bv);
        const float acc[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
        float r[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) r[e] = pk::GemmEpilogueCombine(p, acc[e], cv[e], bv[e]);
        Store4(d + 4 * q, r);
      }
    }
  }
}

}  // namespace

#define PGK_EPILOGUE_KERNEL(SRC, SRCC, OUT, OUTC)                                        \
  extern "C" __global__ void pgk_gemm_epilogue_##SRCC##_##OUTC(const pk::GemmParams p) { \
    Apply<SRC, OUT>(p);                                                                  \
  }

// pgk_gemm_epilogue_v4_f4_<out>: ApplyVec4 (float32 product).
#define PGK_EPILOGUE_VEC4_KERNEL(OUT, OUTC)                                           \
  extern "C" __global__ void pgk_gemm_epilogue_v4_f4_##OUTC(const pk::GemmParams p) { \
    ApplyVec4<OUT>(p);                                                                \
  }

PGK_EPILOGUE_KERNEL(float, f4, float, f4)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::float16, f2)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::bfloat16, bf2)
PGK_EPILOGUE_KERNEL(double, f8, double, f8)
PGK_EPILOGUE_VEC4_KERNEL(float, f4)
PGK_EPILOGUE_VEC4_KERNEL(pygpukit::float16, f2)
PGK_EPILOGUE_VEC4_KERNEL(pygpukit::bfloat16, bf2)
