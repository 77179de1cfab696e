// CPU kernels of the two-operand elementwise functions (one file per arity, so the
// instantiations compile in parallel).
#include "ops/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops::cpu_kernels {

absl::Status ElementwiseBinary(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args,
                               KeepAlive keep) {
  return ew_detail::ElementwiseOfArity<2>(s, l, args, std::move(keep));
}

}  // namespace pygpukit::ops::cpu_kernels
