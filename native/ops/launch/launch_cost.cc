#include "ops/launch/launch_cost.h"

namespace pygpukit::ops {

int64_t DistinctBytes(const GPUArray& a) {
  if (a.is_contiguous()) return a.nbytes();
  int64_t n = a.itemsize();
  for (int d = 0; d < a.ndim(); ++d) {
    if (a.strides()[d] != 0) n *= a.shape()[d];
  }
  return a.size() == 0 ? 0 : n;
}

LaunchCost ElementwiseCost(absl::Span<const GPUArray* const> arrays, int64_t n) {
  LaunchCost c;
  c.flops = n;
  for (const GPUArray* a : arrays) c.bytes += DistinctBytes(*a);
  return c;
}

LaunchCost ReduceCost(int64_t n_in, DType in, int64_t n_out, DType out) {
  return LaunchCost{n_in, n_in * ItemSize(in) + n_out * ItemSize(out)};
}

}  // namespace pygpukit::ops
