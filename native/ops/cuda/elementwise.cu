// CUDA kernels of the elementwise families. Each is an extern "C" symbol named
// pgk_<family>_<dtype code> so the dispatcher can look it up in the embedded fatbin. The bodies
// are the shared per-element functions of ops/kernels/elementwise.h; launches use a grid-stride
// loop over the (coalesced) output index space, one element per thread per iteration.
#include "core/dtype_list.h"
#include "ops/cuda/grid_stride.h"
#include "ops/kernels/elementwise.h"
#include "ops/kernels/gather.h"
#include "ops/kernels/search.h"

namespace pk = pygpukit::kernels;
using pk::ElementwiseParams;

namespace {

// DType ordinals, in PGK_FOR_EACH_DTYPE order (dtype.h's enum is host-only).
enum DTypeOrdinal : int {
#define PGK_ORDINAL(E, T, C) k##E,
  PGK_FOR_EACH_DTYPE(PGK_ORDINAL)
#undef PGK_ORDINAL
};

// Copy into Dst from a source whose dtype is picked at run time: the branch is uniform across
// the grid, and it keeps the kernel count at one per destination dtype.
template <typename Dst>
__device__ __forceinline__ void CopyTo(const ElementwiseParams& p, int64_t i) {
  switch (p.a_dtype) {
#define PGK_COPY_CASE(E, T, C)     \
  case k##E:                       \
    pk::CopyElement<T, Dst>(p, i); \
    break;
    PGK_FOR_EACH_DTYPE(PGK_COPY_CASE)
#undef PGK_COPY_CASE
  }
}

template <typename Word>
__device__ __forceinline__ void FillElement(const ElementwiseParams& p, int64_t i) {
  Word v = *reinterpret_cast<const Word*>(p.scalar);
  Word* out = static_cast<Word*>(p.out);
  if (p.contiguous) {
    out[i] = v;
  } else {
    out[pk::OffsetOf(i, p.ndim, p.shape, p.out_strides)] = v;
  }
}

template <typename T>
constexpr bool kHasArange = !pk::IsComplexT<T>::value && !std::is_same_v<T, bool>;

template <typename T>
constexpr bool kHasDivide = !std::is_integral_v<T>;

}  // namespace

#define PGK_DEFINE_DTYPE_KERNELS(E, T, C)                                 \
  extern "C" __global__ void pgk_copy_##C(ElementwiseParams p) {          \
    PGK_GRID_STRIDE_LOOP(i, p.n) CopyTo<T>(p, i);                         \
  }                                                                       \
  extern "C" __global__ void pgk_add_##C(ElementwiseParams p) {           \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::BinaryElement<pk::AddOp, T>(p, i);   \
  }                                                                       \
  extern "C" __global__ void pgk_subtract_##C(ElementwiseParams p) {      \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::BinaryElement<pk::SubOp, T>(p, i);   \
  }                                                                       \
  extern "C" __global__ void pgk_multiply_##C(ElementwiseParams p) {      \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::BinaryElement<pk::MulOp, T>(p, i);   \
  }                                                                       \
  extern "C" __global__ void pgk_divide_##C(ElementwiseParams p) {        \
    if constexpr (kHasDivide<T>) {                                        \
      PGK_GRID_STRIDE_LOOP(i, p.n) pk::BinaryElement<pk::DivOp, T>(p, i); \
    }                                                                     \
  }                                                                       \
  extern "C" __global__ void pgk_negative_##C(ElementwiseParams p) {      \
    if constexpr (!std::is_same_v<T, bool>) {                             \
      PGK_GRID_STRIDE_LOOP(i, p.n) pk::UnaryElement<pk::NegOp, T>(p, i);  \
    }                                                                     \
  }                                                                       \
  extern "C" __global__ void pgk_arange_##C(pk::ArangeParams p) {         \
    if constexpr (kHasArange<T>) {                                        \
      PGK_GRID_STRIDE_LOOP(i, p.n) pk::ArangeElement<T>(p, i);            \
    }                                                                     \
  }                                                                       \
  extern "C" __global__ void pgk_searchsorted_##C(pk::SearchParams p) {   \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::SearchElement<T>(p, i);              \
  }                                                                       \
  extern "C" __global__ void pgk_merge_##C(pk::MergeParams p) {           \
    PGK_GRID_STRIDE_LOOP(i, p.total) pk::MergeElement<T>(p, i);           \
  }

PGK_FOR_EACH_DTYPE(PGK_DEFINE_DTYPE_KERNELS)
#undef PGK_DEFINE_DTYPE_KERNELS

#define PGK_DEFINE_FILL(BYTES, WORD)                                 \
  extern "C" __global__ void pgk_fill_##BYTES(ElementwiseParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) FillElement<WORD>(p, i);            \
  }
PGK_DEFINE_FILL(1, uint8_t)
PGK_DEFINE_FILL(2, uint16_t)
PGK_DEFINE_FILL(4, uint32_t)
PGK_DEFINE_FILL(8, uint64_t)
PGK_DEFINE_FILL(16, pygpukit::complex128)
#undef PGK_DEFINE_FILL

#define PGK_DEFINE_GATHER(BYTES, WORD)                                 \
  extern "C" __global__ void pgk_gather_##BYTES(pk::GatherParams p) {  \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::GatherElement<WORD>(p, i);        \
  }                                                                    \
  extern "C" __global__ void pgk_scatter_##BYTES(pk::GatherParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::ScatterElement<WORD>(p, i);       \
  }
PGK_DEFINE_GATHER(1, uint8_t)
PGK_DEFINE_GATHER(2, uint16_t)
PGK_DEFINE_GATHER(4, uint32_t)
PGK_DEFINE_GATHER(8, uint64_t)
PGK_DEFINE_GATHER(16, pygpukit::complex128)
#undef PGK_DEFINE_GATHER
