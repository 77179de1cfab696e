// CPU reductions and scans: the reducers of ops/reduce/reduce_ops.h folded over strided
// layouts on the host thread pool. Determinism does not depend on the thread count: the reduced
// range of an output is cut into fixed chunks whose states are combined in chunk order.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/kernels/complex_math.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/reduce/reduce_kernels.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kChunk = 1 << 14;  // reduced elements folded by one task
constexpr int64_t kGrain = 1 << 15;  // elements per parallel task, at least

// Walks the element offsets of linear indices begin, begin + 1, ... over a strided layout.
class Walker {
 public:
  Walker(int64_t begin, int ndim, const int64_t* shape, const int64_t* stride)
      : ndim_(ndim), shape_(shape), stride_(stride) {
    int64_t rem = begin;
    for (int d = ndim - 1; d >= 0; --d) {
      idx_[d] = rem % shape[d];
      rem /= shape[d];
      off_ += idx_[d] * stride[d];
    }
  }
  int64_t offset() const { return off_; }
  void Next() {
    for (int d = ndim_ - 1; d >= 0; --d) {
      off_ += stride_[d];
      if (++idx_[d] < shape_[d]) return;
      off_ -= shape_[d] * stride_[d];
      idx_[d] = 0;
    }
  }

 private:
  int ndim_;
  const int64_t* shape_;
  const int64_t* stride_;
  int64_t idx_[kernels::kKernelMaxDims] = {};
  int64_t off_ = 0;
};

template <class R>
typename R::Acc Fold(const kernels::ReduceParams& p, int64_t o, int64_t begin, int64_t end) {
  using C = typename R::Compute;
  const C* x = static_cast<const C*>(p.in) +
               kernels::OffsetOf(o, static_cast<int>(p.out_ndim), p.out_shape, p.out_stride);
  typename R::Acc acc = R::Init();
  if (p.red_ndim == 1 && p.red_stride[0] == 1) {
    for (int64_t r = begin; r < end; ++r) R::Update(acc, x[r], r);
    return acc;
  }
  Walker w(begin, static_cast<int>(p.red_ndim), p.red_shape, p.red_stride);
  for (int64_t r = begin; r < end; ++r, w.Next()) R::Update(acc, x[w.offset()], r);
  return acc;
}

template <class R, class Out>
void RunReduce(const kernels::ReduceParams& p) {
  using Acc = typename R::Acc;
  Out* out = static_cast<Out*>(p.out);
  const int64_t chunks = std::max<int64_t>(1, (p.n_red + kChunk - 1) / kChunk);
  if (chunks == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(p.n_red, 1));
    cpu::ParallelFor(p.n_out, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        out[o] = R::template Finalize<Out>(Fold<R>(p, o, 0, p.n_red), p.n_red, p.correction);
      }
    });
    return;
  }
  std::vector<Acc> part(p.n_out * chunks);
  cpu::ParallelFor(p.n_out * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / chunks, c = t % chunks;
      part[t] = Fold<R>(p, o, c * kChunk, std::min(p.n_red, (c + 1) * kChunk));
    }
  });
  for (int64_t o = 0; o < p.n_out; ++o) {
    Acc acc = R::Init();
    for (int64_t c = 0; c < chunks; ++c) acc = R::Combine(acc, part[o * chunks + c]);
    out[o] = R::template Finalize<Out>(acc, p.n_red, p.correction);
  }
}

template <class R, class Out>
void RunScan(const kernels::ScanParams& p) {
  using C = typename R::Compute;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(p.length, 1));
  cpu::ParallelFor(p.n_lines, grain, [&](int64_t b, int64_t e) {
    for (int64_t line = b; line < e; ++line) {
      const int nd = static_cast<int>(p.line_ndim);
      const C* x =
          static_cast<const C*>(p.in) + kernels::OffsetOf(line, nd, p.line_shape, p.line_in_stride);
      Out* y =
          static_cast<Out*>(p.out) + kernels::OffsetOf(line, nd, p.line_shape, p.line_out_stride);
      typename R::Acc acc = R::Init();
      if (p.include_initial) {
        *y = R::template Finalize<Out>(acc, 0, 0.0);
        y += p.out_axis_stride;
      }
      for (int64_t i = 0; i < p.length; ++i) {
        R::Update(acc, x[i * p.in_axis_stride], i);
        y[i * p.out_axis_stride] = R::template Finalize<Out>(acc, i + 1, 0.0);
      }
    }
  });
}

// Whether the op layer can send compute type T to reduction `op` (so its loop is instantiated).
template <typename T>
constexpr bool Accepts(ReduceOp op) {
  constexpr bool is_complex = kernels::IsComplexT<T>::value;
  constexpr bool is_inexact =
      is_complex || std::is_floating_point_v<T> || kernels::IsNarrowFloatT<T>::value;
  switch (op) {
    case ReduceOp::kMean:
    case ReduceOp::kVar:
    case ReduceOp::kStd:
      return is_inexact;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
    case ReduceOp::kArgMax:
    case ReduceOp::kArgMin:
      return !is_complex;
    default:
      return true;
  }
}

// mean / var / std: integer inputs compute in double and give float32.
constexpr bool Averages(ReduceOp op) {
  return op == ReduceOp::kMean || op == ReduceOp::kVar || op == ReduceOp::kStd;
}

// The result type of reduction `op` over compute type T (the op layer's result dtype).
template <ReduceOp kOp, typename T>
using OutOf = std::conditional_t<
    kOp == ReduceOp::kArgMax || kOp == ReduceOp::kArgMin, int64_t,
    std::conditional_t<
        kOp == ReduceOp::kAll || kOp == ReduceOp::kAny, bool,
        std::conditional_t<kOp == ReduceOp::kVar || kOp == ReduceOp::kStd, kernels::RealOf<T>, T>>>;

// Calls fn.template operator()<R, Out>() for the reducer of l.op over l.compute.
template <typename Fn>
absl::Status Dispatch(const ReduceLaunch& l, DType out, Fn&& fn) {
  return VisitDType(l.compute, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    switch (l.op) {
#define PGK_REDUCE_CASE(E, name, R)                                                        \
  case ReduceOp::k##E:                                                                     \
    if constexpr (Accepts<T>(ReduceOp::k##E)) {                                            \
      using Out = OutOf<ReduceOp::k##E, T>;                                                \
      if (DTypeOf<Out>::value == out) return fn.template operator()<kernels::R<T>, Out>(); \
      if constexpr (std::is_same_v<T, double> && Averages(ReduceOp::k##E)) {               \
        if (out == DType::Float32) return fn.template operator()<kernels::R<T>, float>();  \
      }                                                                                    \
    }                                                                                      \
    break;
      PGK_FOR_EACH_REDUCE_OP(PGK_REDUCE_CASE)
#undef PGK_REDUCE_CASE
    }
    return RuntimeError(absl::StrCat(l.name, ": no CPU kernel from ", DTypeName(l.compute), " to ",
                                     DTypeName(out)));
  });
}

// The loops are instantiated per compute dtype only: the input is converted to it first.
absl::StatusOr<GPUArray> Source(LaunchContext& ctx, const ReduceLaunch& l, const GPUArray& a,
                                const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(GPUArray src, AsType(a, l.compute, /*copy=*/false));
  PGK_RETURN_IF_ERROR(ctx.Use(src));
  PGK_RETURN_IF_ERROR(ctx.Use(out));
  return src;
}

absl::Status ReduceCpu(LaunchContext& ctx, const ReduceLaunch& l, const GPUArray& a,
                       absl::Span<const bool> reduced, const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(GPUArray src, Source(ctx, l, a, out));
  PGK_ASSIGN_OR_RETURN(kernels::ReduceParams p,
                       ReduceParamsOf(l.name, src, reduced, out, l.correction));
  const LaunchCost cost = ReduceCost(src.size(), src.dtype(), out.size(), out.dtype());
  return Dispatch(l, out.dtype(), [&]<class R, class Out>() -> absl::Status {
    return ctx.HostTask(
        l.name, [p] { RunReduce<R, Out>(p); }, cost);
  });
}

absl::Status ScanCpu(LaunchContext& ctx, const ReduceLaunch& l, const GPUArray& a, int axis,
                     bool include_initial, const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(GPUArray src, Source(ctx, l, a, out));
  PGK_ASSIGN_OR_RETURN(kernels::ScanParams p,
                       ScanParamsOf(l.name, src, axis, include_initial, out));
  const LaunchCost cost = ReduceCost(src.size(), src.dtype(), out.size(), out.dtype());
  return Dispatch(l, out.dtype(), [&]<class R, class Out>() -> absl::Status {
    using C = typename R::Compute;
    if constexpr (std::is_same_v<R, kernels::SumReducer<C>> ||
                  std::is_same_v<R, kernels::ProdReducer<C>>) {
      return ctx.HostTask(
          l.name, [p] { RunScan<R, Out>(p); }, cost);
    } else {
      return RuntimeError(absl::StrCat(l.name, ": no CPU scan"));
    }
  });
}

PGK_REGISTER_KERNEL(kReduceKernel, kCpu, ReduceCpu);
PGK_REGISTER_KERNEL(kScanKernel, kCpu, ScanCpu);

}  // namespace
}  // namespace pygpukit::ops
