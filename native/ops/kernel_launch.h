// Internal: what has not moved into a kernel family folder yet: the matmul problem and its
// launch (routed by device to cpu_kernels / cuda_kernels; moving to ops/gemm), residency pins
// for ops that read addresses outside a LaunchContext, NewArray and EncodeScalar.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/hal/backend.h"
#include "ops/array.h"
#include "ops/elementwise/elementwise_codegen.h"
#include "ops/kernels/gemm_params.h"
#include "ops/kernels/params.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit {
struct PreemptSignal;  // runtime/dispatcher.h
}  // namespace pygpukit

namespace pygpukit::ops {

/// Epilogue of a MatmulProblem: out = act(alpha * acc + beta * addend + bias), in `out` dtype.
struct MatmulEpilogue {
  DType out;  // dtype of the output, the addend and the bias
  double alpha = 1.0, beta = 0.0;
  const void* addend = nullptr;  // read only when beta != 0
  int64_t addend_batch = 0, addend_row = 0, addend_col = 0;
  const void* bias = nullptr;  // n values per batch (bias_batch apart), or null
  int64_t bias_batch = 0;
  kernels::GemmActivation activation = kernels::kActNone;
  /// True when the epilogue only stores the product, possibly in a wider dtype (what
  /// cuBLASLt serves).
  bool trivial() const {
    return alpha == 1.0 && beta == 0.0 && bias == nullptr && activation == kernels::kActNone;
  }
};

/// One (batched) matrix product C = epilogue(A @ B). Element (b, i, j) of X lives at
/// x + b * x_batch + i * x_row + j * x_col (element strides); A and B share `dtype`, C has the
/// epilogue's dtype.
struct MatmulProblem {
  DType dtype;
  int64_t batch, m, n, k;
  const void* a;
  int64_t a_batch, a_row, a_col;
  const void* b;
  int64_t b_batch, b_row, b_col;
  void* c;
  int64_t c_batch, c_row, c_col;
  MatmulOptions options;
  MatmulEpilogue epilogue;
};

/// The kernel parameter block of a problem (tile fields left zero).
kernels::GemmParams GemmParamsOf(const MatmulProblem& p);

/// 2 m n k FLOPs per batch; A, B, the output (and the addend, the bias) moved once.
LaunchCost MatmulCost(const MatmulProblem& p);

absl::Status LaunchMatmul(const MatmulProblem& problem, Device device, KeepAlive keep);
/// problem's output = its epilogue applied to `src`, a plain product (float32 / float64) laid
/// out like the output. CUDA only: the CPU backend always fuses.
absl::Status LaunchGemmEpilogue(const MatmulProblem& problem, const GPUArray& src);

/// The buffers of `arrays` (nulls skipped), for a CPU task to hold while it runs.
KeepAlive Keep(std::initializer_list<const GPUArray*> arrays);
/// The bytes `keep` holds (what a queued CPU task keeps alive: Dispatcher::LaunchHost bounds
/// the queue by it).
int64_t HeldBytes(const KeepAlive& keep);
/// The stream work on a's device is queued on (Runtime::stream).
absl::StatusOr<hal::Stream*> StreamOf(const GPUArray& a);

/// Holds the arrays' buffers resident (paging spilled ones back in) while the caller reads
/// their device addresses and enqueues work on them.
absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays);
inline absl::StatusOr<ResidencyPin> Resident(std::initializer_list<const GPUArray*> arrays) {
  return Resident(absl::MakeConstSpan(arrays.begin(), arrays.size()));
}

/// A new C-contiguous array from the device's memory pool; validation errors name `op`.
absl::StatusOr<GPUArray> NewArray(absl::Span<const int64_t> shape, DType dtype, Device device,
                                  absl::string_view op);

/// Encodes a scalar as `dtype` (for fills and scalar operands); OverflowError when an integer
/// does not fit an integer dtype.
absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16, absl::string_view op);

namespace cpu_kernels {
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, KeepAlive keep);
}  // namespace cpu_kernels

namespace cuda_kernels {
/// Matmul on a CUDA device: selects a kernel family (ops/gemm_select.h) and launches it.
/// UnimplementedError when the selection cannot fuse the requested epilogue (the op layer then
/// runs the product and the epilogue separately).
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, Device device);
/// Matmul on the preemptible sm90 kernels (cuda_kernels::GemmSm90Preemptible): host-synchronous,
/// stops while `signal` is set and resumes after `await_resume` returns; returns the
/// preemptions.
/// NotImplementedError where they cannot serve `p` (other dtypes or families, a partitioned
/// stream, another architecture): the caller then takes the plain path.
absl::StatusOr<int> MatmulPreemptible(hal::Stream& s, const MatmulProblem& p, Device device,
                                      const PreemptSignal& signal,
                                      const std::function<void()>& await_resume);
/// cuBLASLt-backed plain matmul; dtypes float16/bfloat16/float32/float64/complex64/complex128,
/// output in the input dtype or float32 for 16-bit inputs.
absl::Status MatmulCublasLt(hal::Stream& s, const MatmulProblem& p, Device device);
/// out = epilogue(src) elementwise, where src (float32, or float64 for float64 outputs) holds a
/// plain product laid out like out (for the unfused epilogue path).
absl::Status GemmEpilogueApply(hal::Stream& s, const MatmulProblem& p, const void* src,
                               DType src_dtype);
}  // namespace cuda_kernels

}  // namespace pygpukit::ops
