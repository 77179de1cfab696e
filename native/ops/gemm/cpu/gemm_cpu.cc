// CPU matmul: cache-blocked GEMM. B panels (KC x NC) are packed once and shared; row blocks of A
// (MC x KC) are packed per thread; the inner loop runs over contiguous packed B rows so the
// compiler vectorizes it. Accumulation is in float for 16-bit types, else in the dtype itself.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/gemm/gemm_epilogue.h"
#include "ops/gemm/gemm_kernels.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kMC = 64, kKC = 256, kNC = 512;

template <typename T>
using AccOf = std::conditional_t<kernels::IsNarrowFloatT<T>::value, float, T>;

template <typename T, typename Out>
void GemmOne(const GemmProblem& p, const kernels::GemmParams& g, int64_t batch) {
  using Acc = AccOf<T>;
  const T* A = static_cast<const T*>(p.a.ptr) + batch * p.a.batch;
  const T* B = static_cast<const T*>(p.b.ptr) + batch * p.b.batch;
  Out* C = static_cast<Out*>(p.d) + batch * p.d_batch;
  const bool trivial = p.plain();
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<Acc> acc(static_cast<size_t>(M * N), Acc(0));
  std::vector<Acc> bp(static_cast<size_t>(kKC * kNC));
  for (int64_t jc = 0; jc < N; jc += kNC) {
    const int64_t nc = std::min(kNC, N - jc);
    for (int64_t kc = 0; kc < K; kc += kKC) {
      const int64_t kcn = std::min(kKC, K - kc);
      for (int64_t k = 0; k < kcn; ++k) {
        for (int64_t j = 0; j < nc; ++j) {
          bp[k * nc + j] = kernels::Cast<Acc>(B[(kc + k) * p.b.row + (jc + j) * p.b.col]);
        }
      }
      const int64_t row_blocks = (M + kMC - 1) / kMC;
      cpu::ParallelFor(row_blocks, 1, [&](int64_t rb0, int64_t rb1) {
        std::vector<Acc> ap(static_cast<size_t>(kMC * kKC));
        for (int64_t rb = rb0; rb < rb1; ++rb) {
          const int64_t ic = rb * kMC, mc = std::min(kMC, M - ic);
          for (int64_t i = 0; i < mc; ++i) {
            for (int64_t k = 0; k < kcn; ++k) {
              ap[i * kcn + k] = kernels::Cast<Acc>(A[(ic + i) * p.a.row + (kc + k) * p.a.col]);
            }
          }
          for (int64_t i = 0; i < mc; ++i) {
            Acc* crow = acc.data() + (ic + i) * N + jc;
            for (int64_t k = 0; k < kcn; ++k) {
              const Acc a = ap[i * kcn + k];
              const Acc* brow = bp.data() + k * nc;
              for (int64_t j = 0; j < nc; ++j) crow[j] = crow[j] + a * brow[j];
            }
          }
        }
      });
    }
  }
  cpu::ParallelFor(M, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        Acc v = acc[i * N + j];
        if constexpr (!kernels::IsComplexT<T>::value) {
          if (!trivial) v = kernels::GemmEpilogueValue<Acc, Out>(g, v, batch, i, j);
        }
        C[i * p.d_row + j] = kernels::Cast<Out>(v);
      }
    }
  });
}

// The CPU backend's one GEMM kernel: every dtype, layout and epilogue, fused.
absl::Status GemmCpu(LaunchContext& ctx, const GemmProblem& p, const GemmChoice&) {
  return VisitDType(p.in, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      return TypeError(absl::StrCat("matmul: unsupported dtype ", DTypeName(p.in)));
    } else {
      const kernels::GemmParams g = ParamsOf(p);
      if (p.out == p.in) {
        return ctx.HostTask(
            "matmul",
            [p, g] {
              for (int64_t b = 0; b < p.batch; ++b) GemmOne<T, T>(p, g, b);
            },
            GemmCost(p));
      }
      if constexpr (kernels::IsNarrowFloatT<T>::value) {
        if (p.out == DType::Float32) {
          return ctx.HostTask(
              "matmul",
              [p, g] {
                for (int64_t b = 0; b < p.batch; ++b) GemmOne<T, float>(p, g, b);
              },
              GemmCost(p));
        }
      }
      return TypeError(absl::StrCat("matmul: output dtype ", DTypeName(p.out), " for ",
                                    DTypeName(p.in), " operands"));
    }
  });
}

}  // namespace

PGK_REGISTER_KERNEL(kGemmProduct, kCpu, GemmCpu);

}  // namespace pygpukit::ops
