// CPU kernels of the three-operand (where, clip) elementwise functions (one file per arity, so the
// instantiations compile in parallel).
#include "ops/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops::cpu_kernels {

absl::Status ElementwiseTernary(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args,
                                KeepAlive keep) {
  return ew_detail::ElementwiseOfArity<3>(s, l, args, std::move(keep));
}

absl::Status Elementwise(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep) {
  switch (l.inputs.size()) {
    case 1:
      return ElementwiseUnary(s, l, args, std::move(keep));
    case 2:
      return ElementwiseBinary(s, l, args, std::move(keep));
    case 3:
      return ElementwiseTernary(s, l, args, std::move(keep));
  }
  return RuntimeError(absl::StrCat(l.name, ": ", l.inputs.size(), " operands"));
}

}  // namespace pygpukit::ops::cpu_kernels
