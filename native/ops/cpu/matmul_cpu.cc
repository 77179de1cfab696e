// CPU matmul: cache-blocked GEMM. B panels (KC x NC) are packed once and shared; row blocks of A
// (MC x KC) are packed per thread; the inner loop runs over contiguous packed B rows so the
// compiler vectorizes it. Accumulation is in float for 16-bit types, else in the dtype itself.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/gemm_epilogue.h"
#include "ops/kernels/scalar_ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

constexpr int64_t kMC = 64, kKC = 256, kNC = 512;

template <typename T>
using AccOf = std::conditional_t<kernels::IsHalfT<T>::value, float, T>;

template <typename T, typename Out>
void GemmOne(const MatmulProblem& p, const kernels::GemmParams& g, int64_t batch) {
  using Acc = AccOf<T>;
  const T* A = static_cast<const T*>(p.a) + batch * p.a_batch;
  const T* B = static_cast<const T*>(p.b) + batch * p.b_batch;
  Out* C = static_cast<Out*>(p.c) + batch * p.c_batch;
  const bool trivial = p.epilogue.trivial();
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<Acc> acc(static_cast<size_t>(M * N), Acc(0));
  std::vector<Acc> bp(static_cast<size_t>(kKC * kNC));
  for (int64_t jc = 0; jc < N; jc += kNC) {
    const int64_t nc = std::min(kNC, N - jc);
    for (int64_t kc = 0; kc < K; kc += kKC) {
      const int64_t kcn = std::min(kKC, K - kc);
      for (int64_t k = 0; k < kcn; ++k) {
        for (int64_t j = 0; j < nc; ++j) {
          bp[k * nc + j] = kernels::Cast<Acc>(B[(kc + k) * p.b_row + (jc + j) * p.b_col]);
        }
      }
      const int64_t row_blocks = (M + kMC - 1) / kMC;
      cpu::ParallelFor(row_blocks, 1, [&](int64_t rb0, int64_t rb1) {
        std::vector<Acc> ap(static_cast<size_t>(kMC * kKC));
        for (int64_t rb = rb0; rb < rb1; ++rb) {
          const int64_t ic = rb * kMC, mc = std::min(kMC, M - ic);
          for (int64_t i = 0; i < mc; ++i) {
            for (int64_t k = 0; k < kcn; ++k) {
              ap[i * kcn + k] = kernels::Cast<Acc>(A[(ic + i) * p.a_row + (kc + k) * p.a_col]);
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
        C[i * p.c_row + j * p.c_col] = kernels::Cast<Out>(v);
      }
    }
  });
}

}  // namespace

absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, KeepAlive keep) {
  return VisitDType(p.dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      return TypeError(absl::StrCat("matmul: unsupported dtype ", DTypeName(p.dtype)));
    } else {
      const kernels::GemmParams g = GemmParamsOf(p);
      const int64_t held = HeldBytes(keep);
      if (p.epilogue.out == p.dtype) {
        return Runtime::Get().dispatcher().LaunchHost(
            s, "matmul",
            [p, g, keep = std::move(keep)] {
              for (int64_t b = 0; b < p.batch; ++b) GemmOne<T, T>(p, g, b);
            },
            MatmulCost(p), held);
      }
      if constexpr (kernels::IsHalfT<T>::value) {
        if (p.epilogue.out == DType::Float32) {
          return Runtime::Get().dispatcher().LaunchHost(
              s, "matmul",
              [p, g, keep = std::move(keep)] {
                for (int64_t b = 0; b < p.batch; ++b) GemmOne<T, float>(p, g, b);
              },
              MatmulCost(p), held);
        }
      }
      return TypeError(absl::StrCat("matmul: output dtype ", DTypeName(p.epilogue.out), " for ",
                                    DTypeName(p.dtype), " operands"));
    }
  });
}

}  // namespace pygpukit::ops::cpu_kernels
