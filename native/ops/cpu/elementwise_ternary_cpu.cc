// CPU kernels of the three-operand (where, clip) elementwise functions: each (function, compute
// dtype) pair of the op table instantiates the shared loop with the function's functor.
#include "ops/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

template <typename Op, EwDomain D>
absl::Status Run(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep) {
  return VisitDType(l.compute, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (ew_detail::InDomain<D, T>()) {
      if constexpr (std::is_same_v<Op, kernels::WhereOp>) {
        return ew_detail::Enqueue<T, bool, T, T>(
            s, l, args, std::move(keep), [](bool c, T x, T y) { return Op::Apply(c, x, y); });
      } else {
        return ew_detail::Enqueue<T, T, T, T>(s, l, args, std::move(keep),
                                              [](T x, T lo, T hi) { return Op::Apply(x, lo, hi); });
      }
    } else {
      return RuntimeError(absl::StrCat(l.name, ": no CPU kernel for ", DTypeName(l.compute)));
    }
  });
}

// Run for functions of `kArity` operands; the other cases of the op switch instantiate nothing.
template <int kOpArity, typename Op, EwDomain D>
absl::Status RunIf(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep) {
  if constexpr (kOpArity == 3) {
    return Run<Op, D>(s, l, args, std::move(keep));
  } else {
    return RuntimeError(absl::StrCat(l.name, ": not a function of 3 operands"));
  }
}

}  // namespace

absl::Status ElementwiseTernary(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args,
                                KeepAlive keep) {
  switch (l.op) {
#define PGK_EW_CASE(E, name, F, arity, domain, result) \
  case ElementwiseOp::k##E:                            \
    return RunIf<arity, kernels::F, EwDomain::domain>(s, l, args, std::move(keep));
    PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_CASE)
#undef PGK_EW_CASE
  }
  return RuntimeError(absl::StrCat(l.name, ": not a function of 3 operands"));
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
