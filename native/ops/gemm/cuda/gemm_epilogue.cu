// Unfused GEMM epilogue: D = act(alpha * src + beta * C + bias) elementwise, where src holds a
// plain product (float32, or float64 for float64 outputs) laid out like D. Used when the kernel
// family that computed the product cannot fuse the epilogue (cuBLASLt).
#include "ops/gemm/gemm_epilogue.h"

namespace pk = pygpukit::kernels;

namespace {

// Blocks walk the output's rows (batch, row) grid-stride, one integer division per row; a
// block's threads walk the row's columns, so the product is read and D written coalesced.
// (Per-element 64-bit index arithmetic made the pass several times slower than its bytes.)
template <typename Src, typename Out>
__device__ __forceinline__ void Apply(const pk::GemmParams& p) {
  const int64_t rows = p.batch * p.m;
  for (int64_t line = blockIdx.x; line < rows; line += gridDim.x) {
    const int64_t b = line / p.m, row = line - b * p.m;
    const Src* src = static_cast<const Src*>(p.a) + b * p.a_batch + row * p.a_row;
    Out* d = static_cast<Out*>(p.d) + b * p.d_batch + row * p.d_row;
    for (int64_t col = threadIdx.x; col < p.n; col += blockDim.x) {
      d[col] = static_cast<Out>(pk::GemmEpilogueValue<Src, Out>(p, src[col], b, row, col));
    }
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
