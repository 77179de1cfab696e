// Device helpers shared by the fused attention kernels (attention_sm80.cu, attention_sm90.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/scalar_types.h"

namespace pygpukit::kernels::attn {

// Two floats as the inputs' 16-bit pair (lo in the low half), rounded to nearest.
template <typename T>
__device__ __forceinline__ uint32_t Pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, pygpukit::bfloat16>) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

// 2^x in two instructions (flushes subnormal results to 0: they round to 0 in the 16-bit P).
__device__ __forceinline__ float Exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// The maximum and the sum of v over the four lanes of a quad (the lanes that hold one row of an
// mma / wgmma accumulator).
__device__ __forceinline__ float QuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float QuadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace pygpukit::kernels::attn
