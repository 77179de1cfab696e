// CUDA random kernels: one thread per Philox block (ops/random/philox.h, shared with the CPU
// loop) in a grid-stride loop; pgk_random_<dtype code> per real dtype.
#include "core/dtype_list.h"
#include "ops/launch/grid_stride.h"
#include "ops/random/philox.h"

namespace pk = pygpukit::kernels;

namespace {

template <typename T>
__device__ __forceinline__ void RandomBlocks(const pk::RandomParams& p) {
  if constexpr (!pk::IsComplexT<T>::value) {  // complex dtypes have no kernel body
    const int64_t per = pk::RandomPerBlock(p.kind, sizeof(T));
    const int64_t blocks = (p.n + per - 1) / per;
    PGK_GRID_STRIDE_LOOP(i, blocks) pk::RandomBlock<T>(p, i);
  }
}

}  // namespace

#define PGK_DEFINE_RANDOM(E, T, C) \
  extern "C" __global__ void pgk_random_##C(pk::RandomParams p) { RandomBlocks<T>(p); }
PGK_FOR_EACH_DTYPE(PGK_DEFINE_RANDOM)
#undef PGK_DEFINE_RANDOM
