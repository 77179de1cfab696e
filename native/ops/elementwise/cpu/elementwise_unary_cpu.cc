// CPU kernels of the one-operand elementwise functions (one file per arity, so the
// instantiations compile in parallel).
#include "ops/elementwise/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops {

absl::Status ElementwiseUnary(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args) {
  return ew_detail::ElementwiseOfArity<1>(ctx, l, args);
}

}  // namespace pygpukit::ops
