// CPU kernels of the nn family: one row per task of the host thread pool, two passes over the
// row in the accumulation type (double sums: the CPU is the reference backend), the shared
// per-element formulas of nn_rows.h.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/status.h"
#include "ops/launch/layout.h"
#include "ops/nn/nn_kernels.h"

namespace pygpukit::ops {
namespace {

using kernels::RowsParams;

template <typename T>
void RowCpu(const RowsParams& p, int64_t r, std::vector<double>& h) {
  using A = kernels::RowAcc<T>;
  const int64_t n = p.cols;
  const T* x = static_cast<const T*>(p.x) + r * n;
  T* y = static_cast<T*>(p.y) + r * n;
  h.resize(static_cast<size_t>(n));
  if (p.residual != nullptr) {
    // h = x + residual rounded to T: the value written to residual_out is the one normalized.
    const T* res = static_cast<const T*>(p.residual) + r * n;
    T* res_out = static_cast<T*>(p.residual_out) + r * n;
    for (int64_t i = 0; i < n; ++i) {
      const T s = kernels::Cast<T>(kernels::Cast<A>(x[i]) + kernels::Cast<A>(res[i]));
      res_out[i] = s;
      h[i] = kernels::Cast<double>(s);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) h[i] = kernels::Cast<double>(x[i]);
  }
  double first = 0.0;
  if (kernels::RowFirstIsMax(p.op)) {
    first = -std::numeric_limits<double>::infinity();
    for (double v : h) first = v > first || v != v ? v : first;  // NaN wins (as torch)
  } else if (p.op == kernels::kRowLayerNorm) {
    for (double v : h) first += v;
  }
  const A a = static_cast<A>(kernels::RowCenter<double>(p.op, first, n));
  double sum = 0.0;
  for (double v : h) sum += static_cast<double>(kernels::RowTerm<A>(p.op, static_cast<A>(v), a));
  const A b = static_cast<A>(kernels::RowScale<double>(p.op, sum, n, p.eps));
  const T* w = static_cast<const T*>(p.weight);
  const T* c = static_cast<const T*>(p.bias);
  for (int64_t i = 0; i < n; ++i) {
    const A wi = w != nullptr ? kernels::Cast<A>(w[i]) : A(1);
    const A ci = c != nullptr ? kernels::Cast<A>(c[i]) : A(0);
    y[i] = kernels::Cast<T>(kernels::RowOut<A>(p.op, static_cast<A>(h[i]), a, b, wi, ci));
  }
}

absl::Status RowsCpu(LaunchContext& ctx, DType dtype, const RowsParams& p) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(p.cols, 1));
      return ctx.HostTask("nn_rows", [p, grain] {
        cpu::ParallelFor(p.rows, grain, [&](int64_t b, int64_t e) {
          std::vector<double> h;
          for (int64_t r = b; r < e; ++r) RowCpu<T>(p, r, h);
        });
      });
    } else {
      return TypeError(absl::StrCat("nn rows: unsupported dtype ", DTypeName(dtype)));
    }
  });
}

absl::Status RopeCpu(LaunchContext& ctx, DType dtype, const kernels::RopeParams& p) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      return ctx.ForEach("apply_rotary", p.rows * (p.dim - p.rot / 2),
                         [p](int64_t i) { kernels::RopeItem<T>(p, i); });
    } else {
      return TypeError(absl::StrCat("apply_rotary: unsupported dtype ", DTypeName(dtype)));
    }
  });
}

PGK_REGISTER_KERNEL(kRowsKernel, kCpu, RowsCpu);
PGK_REGISTER_KERNEL(kRopeKernel, kCpu, RopeCpu);

}  // namespace
}  // namespace pygpukit::ops
