// Hopper GEMM kernels for scaled 8-bit float products (see gemm_sm90_kernel.h): e4m3 x e4m3
// read with wgmma k32, A and B K-major (8-bit wgmma has no transpose), one CTA per cluster, 128 x
// 128 tiles (each k-block's sum promoted into a float32 accumulator beside wgmma's), the
// per-tensor or per-row / column scales applied in the epilogue; bf16, fp16 or float32 out.
#include "ops/gemm/cuda/gemm_sm90_kernel.h"

#define PGK_SM90_FP8(BN)                                                                    \
  PGK_SM90_KERNEL(BN, 1, false, , k, k, 0, 0, __nv_fp8_e4m3, e4m3, pygpukit::bfloat16, bf2) \
  PGK_SM90_KERNEL(BN, 1, false, , k, k, 0, 0, __nv_fp8_e4m3, e4m3, pygpukit::float16, f2)   \
  PGK_SM90_KERNEL(BN, 1, false, , k, k, 0, 0, __nv_fp8_e4m3, e4m3, float, f4)

PGK_SM90_FP8(128)
