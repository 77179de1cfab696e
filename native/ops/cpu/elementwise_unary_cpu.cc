// CPU kernels of the one-operand elementwise functions (one file per arity, so the
// instantiations compile in parallel).
#include "ops/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops::cpu_kernels {

absl::Status ElementwiseUnary(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args,
                              KeepAlive keep) {
  return ew_detail::ElementwiseOfArity<1>(s, l, args, std::move(keep));
}

}  // namespace pygpukit::ops::cpu_kernels
