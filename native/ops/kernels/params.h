// Kernel parameter blocks shared by the host launchers (g++) and the CUDA kernels (nvcc): plain
// structs passed by value, so both compilers must see the same layout. Keep them POD.
#pragma once

#include <cstdint>

namespace pygpukit::kernels {

/// Most dimensions a kernel iterates over after dimension coalescing.
inline constexpr int kKernelMaxDims = 8;

/// Which operand of a binary op is a broadcast scalar passed by value.
enum ScalarOperand : int32_t { kNoScalar = 0, kScalarA = 1, kScalarB = 2 };

/// Elementwise work over a coalesced N-d index space: out = f(a[, b]).
/// Pointers already include each operand's offset; strides are in elements.
struct ElementwiseParams {
  int64_t n;  // number of output elements
  int32_t ndim;
  int32_t contiguous;  // 1 when every array operand is dense in C order (linear indexing)
  int64_t shape[kKernelMaxDims];
  int64_t out_strides[kKernelMaxDims];
  int64_t a_strides[kKernelMaxDims];
  int64_t b_strides[kKernelMaxDims];
  void* out;
  const void* a;
  const void* b;
  int32_t scalar_operand;  // ScalarOperand
  int32_t a_dtype;         // DType of `a` for kernels that dispatch on it at run time (copy)
  alignas(16) unsigned char scalar[16];  // the scalar operand, already in the compute dtype
};

// Both compilers must agree on the layout; a mismatch would silently corrupt kernel arguments.
static_assert(sizeof(ElementwiseParams) == 320, "ElementwiseParams layout changed");

/// Element offset of linear index `i` in an N-d strided layout.
#if defined(__CUDACC__)
__host__ __device__ __forceinline__
#else
inline
#endif
    int64_t
    OffsetOf(int64_t i, int ndim, const int64_t* shape, const int64_t* strides) {
  int64_t off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    int64_t idx = i % shape[d];
    i /= shape[d];
    off += idx * strides[d];
  }
  return off;
}

}  // namespace pygpukit::kernels
