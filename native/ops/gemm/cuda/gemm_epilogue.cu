// Unfused GEMM epilogue: D = act(alpha * src + beta * C + bias) elementwise, where src holds a
// plain product (float32, or float64 for float64 outputs) laid out like D. Used when the kernel
// family that computed the product cannot fuse the epilogue (cuBLASLt).
#include "ops/gemm/gemm_epilogue.h"

namespace pk = pygpukit::kernels;

namespace {

template <typename Src, typename Out>
__device__ __forceinline__ void Apply(const pk::GemmParams& p) {
  const int64_t per_batch = p.m * p.n, total = per_batch * p.batch;
  const Src* src = static_cast<const Src*>(p.a);
  Out* d = static_cast<Out*>(p.d);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / per_batch, r = i % per_batch, row = r / p.n, col = r % p.n;
    const Src acc = src[b * p.a_batch + row * p.a_row + col];
    d[b * p.d_batch + row * p.d_row + col] =
        static_cast<Out>(pk::GemmEpilogueValue<Src, Out>(p, acc, b, row, col));
  }
}

}  // namespace

#define PGK_EPILOGUE_KERNEL(SRC, SRCC, OUT, OUTC)                                        \
  extern "C" __global__ void pgk_gemm_epilogue_##SRCC##_##OUTC(const pk::GemmParams p) { \
    Apply<SRC, OUT>(p);                                                                  \
  }

PGK_EPILOGUE_KERNEL(float, f4, float, f4)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::float16, f2)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::bfloat16, bf2)
PGK_EPILOGUE_KERNEL(double, f8, double, f8)
