// Unfused GEMM epilogue: D = act(alpha * src + beta * C + bias) elementwise, where src holds a
// plain product (float32, or float64 for float64 outputs) laid out like D. Used when the kernel
// family that computed the product cannot fuse the epilogue (cuBLASLt).
#include "ops/gemm/gemm_epilogue.h"

namespace pk = pygpukit::kernels;

namespace {

// Blocks walk the output's rows (batch, row) grid-stride, one integer division per row; a
// block's threads walk the row's columns, so the product is read and D written coalesced.
// (Per-element 64-bit index arithmetic made the pass several times slower than its bytes.)
// Each thread loads kIlp elements of a row before it computes and stores any: with one load in
// flight per thread the pass could not keep enough bytes in flight to reach the memory's rate.
constexpr int kIlp = 4;

template <typename Src, typename Out>
__device__ __forceinline__ void Apply(const pk::GemmParams& p) {
  const int64_t rows = p.batch * p.m;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kIlp;
  for (int64_t line = blockIdx.x; line < rows; line += gridDim.x) {
    const int64_t b = line / p.m, row = line - b * p.m;
    const Src* src = static_cast<const Src*>(p.a) + b * p.a_batch + row * p.a_row;
    Out* d = static_cast<Out*>(p.d) + b * p.d_batch + row * p.d_row;
    for (int64_t col0 = threadIdx.x; col0 < p.n; col0 += step) {
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

}  // namespace

#define PGK_EPILOGUE_KERNEL(SRC, SRCC, OUT, OUTC)                                        \
  extern "C" __global__ void pgk_gemm_epilogue_##SRCC##_##OUTC(const pk::GemmParams p) { \
    Apply<SRC, OUT>(p);                                                                  \
  }

PGK_EPILOGUE_KERNEL(float, f4, float, f4)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::float16, f2)
PGK_EPILOGUE_KERNEL(float, f4, pygpukit::bfloat16, bf2)
PGK_EPILOGUE_KERNEL(double, f8, double, f8)
