// Internal to the CPU backend: the loop every elementwise function runs on (N inputs, strided or
// dense layouts, scalars by value), and the per-arity dispatch over the op table. The per-element
// work is the functor of ops/kernels/math_ops.h, the same code the CUDA JIT compiles.
#pragma once

#include <cstring>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/kernels/complex_math.h"
#include "ops/kernels/math_ops.h"
#include "ops/kernels/params.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"

namespace pygpukit::ops {

/// The CPU backend's elementwise launch: element strides of every operand over a coalesced
/// layout; scalar inputs are read from `scalars` (zero strides).
struct EwCpuArgs {
  static constexpr int kMaxInputs = 3;
  int64_t n = 0;
  int ndim = 0;
  bool contiguous = false;  // every array operand dense in C order (scalars aside)
  int64_t shape[kernels::kKernelMaxDims] = {};
  void* out = nullptr;
  int64_t out_strides[kernels::kKernelMaxDims] = {};
  int ninputs = 0;
  const void* in[kMaxInputs] = {};
  int64_t in_strides[kMaxInputs][kernels::kKernelMaxDims] = {};
  bool in_scalar[kMaxInputs] = {};
  alignas(16) unsigned char scalars[kMaxInputs][16] = {};
  LaunchCost cost;  // declared to the profiler
};

/// The function `l.op` in `l.compute` over inputs already converted to their compute dtypes,
/// into an output of dtype `l.result`, per arity (one file each, so the instantiations compile
/// in parallel).
absl::Status ElementwiseUnary(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args);
absl::Status ElementwiseBinary(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args);
absl::Status ElementwiseTernary(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args);

namespace ew_detail {

/// Whether an op of domain D is instantiated for compute type T (the op layer only sends
/// compute dtypes of the op's domain).
template <EwDomain D, typename T>
constexpr bool InDomain() {
  constexpr bool is_bool = std::is_same_v<T, bool>;
  constexpr bool is_int = std::is_integral_v<T> && !is_bool;
  constexpr bool is_complex = kernels::IsComplexT<T>::value;
  constexpr bool is_real_float = std::is_floating_point_v<T> || kernels::IsNarrowFloatT<T>::value;
  switch (D) {
    case EwDomain::kAll:
      return true;
    case EwDomain::kNumeric:
      return !is_bool;
    case EwDomain::kReal:
      return is_int || is_real_float;
    case EwDomain::kRealOrBool:
      return !is_complex;
    case EwDomain::kInexact:
      return is_real_float || is_complex;
    case EwDomain::kRealInexact:
      return is_real_float;
    case EwDomain::kIntOrBool:
      return is_int || is_bool;
    case EwDomain::kInt:
      return is_int;
    case EwDomain::kLogical:
      return is_bool;
  }
  return false;
}

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk

// out[i] = f(in_0[i], ...) for i in [begin, end).
template <typename R, typename... T, typename F, size_t... I>
void RunRange(const EwCpuArgs& a, const void* const* in, int64_t begin, int64_t end, F f,
              std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(T);
  R* out = static_cast<R*>(a.out);
  if (a.contiguous) {
    const int64_t step[N] = {(a.in_scalar[I] ? 0 : 1)...};
    for (int64_t i = begin; i < end; ++i) {
      out[i] = f(static_cast<const T*>(in[I])[i * step[I]]...);
    }
    return;
  }
  // An odometer over the coalesced dims: offsets advance by strides, no division per element.
  int64_t idx[kernels::kKernelMaxDims] = {};
  int64_t rem = begin, off_out = 0;
  int64_t off[N] = {};
  for (int d = a.ndim - 1; d >= 0; --d) {
    idx[d] = rem % a.shape[d];
    rem /= a.shape[d];
    off_out += idx[d] * a.out_strides[d];
    ((off[I] += idx[d] * a.in_strides[I][d]), ...);
  }
  for (int64_t i = begin; i < end; ++i) {
    out[off_out] = f(static_cast<const T*>(in[I])[off[I]]...);
    for (int d = a.ndim - 1; d >= 0; --d) {
      off_out += a.out_strides[d];
      ((off[I] += a.in_strides[I][d]), ...);
      if (++idx[d] < a.shape[d]) break;
      off_out -= a.shape[d] * a.out_strides[d];
      ((off[I] -= a.shape[d] * a.in_strides[I][d]), ...);
      idx[d] = 0;
    }
  }
}

/// Queues out = f(inputs) on the stream, in parallel chunks on the host thread pool.
template <typename R, typename... T, typename F>
absl::Status Enqueue(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args, F f) {
  if (DTypeOf<R>::value != l.result) {
    return RuntimeError(absl::StrCat(l.name, ": the kernel's result type is ",
                                     DTypeName(DTypeOf<R>::value), ", the op layer expects ",
                                     DTypeName(l.result)));
  }
  return ctx.HostTask(
      l.name,
      [args, f] {
        const void* in[sizeof...(T)];
        for (size_t i = 0; i < sizeof...(T); ++i) {
          in[i] = args.in_scalar[i] ? static_cast<const void*>(args.scalars[i]) : args.in[i];
        }
        cpu::ParallelFor(args.n, kGrain, [&](int64_t b, int64_t e) {
          RunRange<R, T...>(args, in, b, e, f, std::index_sequence_for<T...>{});
        });
      },
      args.cost);
}

/// Queues table function `Op` (of `kArity` operands, domain D) in l.compute.
template <int kArity, typename Op, EwDomain D>
absl::Status Run(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args) {
  return VisitDType(l.compute, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (!InDomain<D, T>()) {
      return RuntimeError(absl::StrCat(l.name, ": no CPU kernel for ", DTypeName(l.compute)));
    } else if constexpr (kArity == 1) {
      using R = decltype(Op::Apply(T{}));
      return Enqueue<R, T>(ctx, l, args, [](T x) { return Op::Apply(x); });
    } else if constexpr (kArity == 2) {
      using R = decltype(Op::Apply(T{}, T{}));
      return Enqueue<R, T, T>(ctx, l, args, [](T x, T y) { return Op::Apply(x, y); });
    } else if constexpr (std::is_same_v<Op, kernels::WhereOp>) {
      return Enqueue<T, bool, T, T>(ctx, l, args,
                                    [](bool c, T x, T y) { return Op::Apply(c, x, y); });
    } else {
      return Enqueue<T, T, T, T>(ctx, l, args,
                                 [](T x, T lo, T hi) { return Op::Apply(x, lo, hi); });
    }
  });
}

/// The table's functions of `kArity` operands (one instantiation per file, compiled in
/// parallel); the other rows of the switch instantiate nothing.
template <int kArity>
absl::Status ElementwiseOfArity(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args) {
  switch (l.op) {
#define PGK_EW_CASE(E, name, F, arity, domain, result)               \
  case ElementwiseOp::k##E:                                          \
    if constexpr (arity == kArity) {                                 \
      return Run<arity, kernels::F, EwDomain::domain>(ctx, l, args); \
    }                                                                \
    break;
    PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_CASE)
#undef PGK_EW_CASE
  }
  return RuntimeError(absl::StrCat(l.name, ": not a function of ", kArity, " operands"));
}

}  // namespace ew_detail
}  // namespace pygpukit::ops
