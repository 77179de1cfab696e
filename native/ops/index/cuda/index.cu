// CUDA kernels of the index family: pgk_gather_<itemsize> and pgk_scatter_<itemsize>, the
// shared per-element bodies of ops/index/gather.h in a grid-stride loop over the output.
#include "core/dtype_list.h"
#include "ops/launch/grid_stride.h"
#include "ops/index/gather.h"

namespace pk = pygpukit::kernels;

#define PGK_DEFINE_GATHER(BYTES, WORD)                                 \
  extern "C" __global__ void pgk_gather_##BYTES(pk::GatherParams p) {  \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::GatherElement<WORD>(p, i);        \
  }                                                                    \
  extern "C" __global__ void pgk_scatter_##BYTES(pk::GatherParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::ScatterElement<WORD>(p, i);       \
  }
PGK_FOR_EACH_WORD(PGK_DEFINE_GATHER)
#undef PGK_DEFINE_GATHER
