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

/// out[i] = start + i * step over a contiguous output.
struct ArangeParams {
  int64_t n;
  void* out;
  double start_f, step_f;   // used for floating outputs
  int64_t start_i, step_i;  // used for integer outputs
};

static_assert(sizeof(ArangeParams) == 48, "ArangeParams layout changed");

/// Most integer index arrays one gather combines (NumPy advanced indexing with that many).
inline constexpr int kGatherMaxIndices = 4;

/// out[i] = src[sum_d c_d * src_strides[d] + sum_k idx_k[c] * idx[k].src_stride] for the
/// coordinates c of linear index i over `shape` (the output's, coalesced; the output is dense).
/// Index values are int64, bounds-checked by the op layer; negative ones count from `extent`.
/// Byte strides for src (the kernel copies `itemsize` bytes, whatever the dtype); element
/// strides for the index arrays (0 where an index array is broadcast).
struct GatherParams {
  int64_t n;
  int32_t ndim;
  int32_t nidx;
  int64_t shape[kKernelMaxDims];
  int64_t src_strides[kKernelMaxDims];
  const void* src;
  void* out;
  struct Index {
    const int64_t* ptr;
    int64_t strides[kKernelMaxDims];
    int64_t src_stride;  // bytes per unit of this index
    int64_t extent;      // of the indexed source axis
  } idx[kGatherMaxIndices];
};

static_assert(sizeof(GatherParams) == 16 + 128 + 16 + kGatherMaxIndices * 88,
              "GatherParams layout changed");

/// out[i] = the insertion point of value i in the sorted 1-D `sorted` (m elements, its order
/// given by `sorter` when not null): the first position whose element is not less than the
/// value (`right`: greater than it). Values are walked over `shape` with element strides; the
/// output is dense int64.
struct SearchParams {
  int64_t n;
  int64_t m;
  int32_t ndim;
  int32_t right;
  int64_t shape[kKernelMaxDims];
  int64_t value_strides[kKernelMaxDims];
  const void* sorted;
  int64_t sorted_stride;  // elements
  const int64_t* sorter;  // null: sorted is in order
  int64_t sorter_stride;
  const void* values;
  int64_t* out;
};

static_assert(sizeof(SearchParams) == 24 + 128 + 48, "SearchParams layout changed");

/// One pass of the stable merge sort of `rows` contiguous rows of n keys: runs of `width`
/// sorted elements are merged in pairs. Each element finds its place in the merged run with a
/// binary search in the other run (ties: the left run first) and moves there, with its int64
/// index when `idx_in` is not null.
struct MergeParams {
  int64_t total;  // rows * n
  int64_t n;
  int64_t width;
  const void* keys_in;
  void* keys_out;
  const int64_t* idx_in;
  int64_t* idx_out;
};

static_assert(sizeof(MergeParams) == 56, "MergeParams layout changed");

/// What a random kernel computes from its Philox stream (ops/kernels/philox.h).
enum RandomKind : int32_t { kRandomUniform = 0, kRandomNormal = 1, kRandomIntegers = 2 };

/// n dense outputs from the Philox4x64-10 stream of `key`: block j (counter `counter` + j,
/// 256-bit, little-endian words) gives outputs j * per_block ... (RandomPerBlock). Uniform:
/// a + b * u; normal: a + b * z; integers: low + (u64 * range) >> 64 in two's complement, with
/// range 0 standing for 2^64 (the raw stream).
struct RandomParams {
  int64_t n;
  void* out;
  uint64_t key[2];
  uint64_t counter[4];
  int32_t kind;  // RandomKind
  int32_t reserved;
  double a, b;
  uint64_t low, range;
};

static_assert(sizeof(RandomParams) == 104, "RandomParams layout changed");

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
