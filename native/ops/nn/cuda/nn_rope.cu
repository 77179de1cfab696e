// CUDA kernels of the nn family's rotary embedding: pgk_nn_rope_<dtype code>(RopeParams), the
// shared per-pair body (nn_rope.h) in a grid-stride loop over rows * (dim - rot / 2) items, so
// consecutive threads take consecutive pairs of a row (coalesced in the NeoX layout; in the
// GPT-J layout each thread moves two neighbours).
#include "ops/launch/grid_stride.h"
#include "ops/nn/nn_rope.h"

namespace pk = pygpukit::kernels;

#define PGK_NN_ROPE(T, C)                                                      \
  extern "C" __global__ void pgk_nn_rope_##C(pk::RopeParams p) {               \
    PGK_GRID_STRIDE_LOOP(i, p.rows*(p.dim - p.rot / 2)) pk::RopeItem<T>(p, i); \
  }

PGK_NN_ROPE(float, f4)
PGK_NN_ROPE(double, f8)
PGK_NN_ROPE(pygpukit::float16, f2)
PGK_NN_ROPE(pygpukit::bfloat16, bf2)
