// CUDA kernels of the elementwise families. Each is an extern "C" symbol named
// pgk_<family>_<dtype code> so the dispatcher can look it up in the embedded fatbin. The bodies
// are the shared per-element functions of ops/kernels/elementwise.h; launches use a grid-stride
// loop over the (coalesced) output index space, one element per thread per iteration.
#include "core/dtype_list.h"
#include "ops/launch/grid_stride.h"
#include "ops/kernels/elementwise.h"

namespace pk = pygpukit::kernels;
using pk::ElementwiseParams;

namespace {

template <typename T>
constexpr bool kHasDivide = !std::is_integral_v<T>;

}  // namespace

#define PGK_DEFINE_DTYPE_KERNELS(E, T, C)                                 \
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
  }

PGK_FOR_EACH_DTYPE(PGK_DEFINE_DTYPE_KERNELS)
#undef PGK_DEFINE_DTYPE_KERNELS
