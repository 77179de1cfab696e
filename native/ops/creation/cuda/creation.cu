// CUDA kernels of the creation family: pgk_copy_<dst dtype code> (the source dtype picked at run
// time), pgk_fill_<itemsize>, pgk_arange_<dtype code>. The bodies are the shared per-element
// functions of ops/creation/creation_elements.h, in a grid-stride loop over the (coalesced)
// output index space.
#include "core/dtype_list.h"
#include "ops/creation/creation_elements.h"
#include "ops/launch/grid_stride.h"

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

template <typename T>
constexpr bool kHasArange = !pk::IsComplexT<T>::value && !std::is_same_v<T, bool>;

}  // namespace

#define PGK_DEFINE_DTYPE_KERNELS(E, T, C)                         \
  extern "C" __global__ void pgk_copy_##C(ElementwiseParams p) {  \
    PGK_GRID_STRIDE_LOOP(i, p.n) CopyTo<T>(p, i);                 \
  }                                                               \
  extern "C" __global__ void pgk_arange_##C(pk::ArangeParams p) { \
    if constexpr (kHasArange<T>) {                                \
      PGK_GRID_STRIDE_LOOP(i, p.n) pk::ArangeElement<T>(p, i);    \
    }                                                             \
  }
PGK_FOR_EACH_DTYPE(PGK_DEFINE_DTYPE_KERNELS)
#undef PGK_DEFINE_DTYPE_KERNELS

#define PGK_DEFINE_FILL(BYTES, WORD)                                 \
  extern "C" __global__ void pgk_fill_##BYTES(ElementwiseParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::FillElement<WORD>(p, i);        \
  }
PGK_FOR_EACH_WORD(PGK_DEFINE_FILL)
#undef PGK_DEFINE_FILL
