// CPU kernels of the one-operand elementwise functions: each (function, compute dtype) pair of the
// op table instantiates the shared loop with the function's functor.
#include "ops/cpu/elementwise_loop_cpu.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

template <typename Op, EwDomain D>
absl::Status Run(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep) {
  return VisitDType(l.compute, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (ew_detail::InDomain<D, T>()) {
      using R = decltype(Op::Apply(T{}));
      return ew_detail::Enqueue<R, T>(s, l, args, std::move(keep),
                                      [](T x) { return Op::Apply(x); });
    } else {
      return RuntimeError(absl::StrCat(l.name, ": no CPU kernel for ", DTypeName(l.compute)));
    }
  });
}

// Run for functions of `kArity` operands; the other cases of the op switch instantiate nothing.
template <int kOpArity, typename Op, EwDomain D>
absl::Status RunIf(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep) {
  if constexpr (kOpArity == 1) {
    return Run<Op, D>(s, l, args, std::move(keep));
  } else {
    return RuntimeError(absl::StrCat(l.name, ": not a function of 1 operands"));
  }
}

}  // namespace

absl::Status ElementwiseUnary(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args,
                              KeepAlive keep) {
  switch (l.op) {
#define PGK_EW_CASE(E, name, F, arity, domain, result) \
  case ElementwiseOp::k##E:                            \
    return RunIf<arity, kernels::F, EwDomain::domain>(s, l, args, std::move(keep));
    PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_CASE)
#undef PGK_EW_CASE
  }
  return RuntimeError(absl::StrCat(l.name, ": not a function of 1 operands"));
}

}  // namespace pygpukit::ops::cpu_kernels
