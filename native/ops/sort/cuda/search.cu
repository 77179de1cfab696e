// CUDA kernels of searchsorted and the merge-sort pass: pgk_searchsorted_<dtype code> and
// pgk_merge_<dtype code>, the shared per-element bodies of ops/sort/search.h in a grid-stride
// loop.
#include "core/dtype_list.h"
#include "ops/launch/grid_stride.h"
#include "ops/sort/search.h"

namespace pk = pygpukit::kernels;

#define PGK_DEFINE_SEARCH_KERNELS(E, T, C)                              \
  extern "C" __global__ void pgk_searchsorted_##C(pk::SearchParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::SearchElement<T>(p, i);            \
  }                                                                     \
  extern "C" __global__ void pgk_merge_##C(pk::MergeParams p) {         \
    PGK_GRID_STRIDE_LOOP(i, p.total) pk::MergeElement<T>(p, i);         \
  }
PGK_FOR_EACH_DTYPE(PGK_DEFINE_SEARCH_KERNELS)
#undef PGK_DEFINE_SEARCH_KERNELS
