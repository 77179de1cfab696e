// Internal: the kernel families ops launch, and their per-backend implementations. Op
// definitions (creation.cc, arith.cc, ...) call the Launch* functions, which build the shared
// parameter blocks and route to cpu/ or cuda/ by the arrays' device; the backends hand the work
// to the dispatcher.
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/hal/backend.h"
#include "ops/array.h"
#include "ops/kernels/gemm_params.h"
#include "ops/kernels/params.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// Elementwise one-operand ops with a kernel of their own.
enum class UnaryOp { kNegative };

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

/// Buffers a queued CPU task must keep alive until it has run.
using KeepAlive = std::vector<std::shared_ptr<Buffer>>;

// ---- routing by device (kernel_launch.cc) ----
/// dst = cast(src) elementwise; shapes equal (src may carry broadcast strides).
absl::Status LaunchCopy(const GPUArray& src, const GPUArray& dst);
/// Every element of dst = `value` (already encoded in dst's dtype, itemsize bytes).
absl::Status LaunchFill(const GPUArray& dst, const unsigned char* value);
/// dst (contiguous) = arange.
absl::Status LaunchArange(const GPUArray& dst, const kernels::ArangeParams& params);
/// out = a op b; a or b may be absent (a scalar in `scalar`, in out's dtype). Arrays share out's
/// dtype and shape (with broadcast strides).
absl::Status LaunchBinary(BinaryOp op, const GPUArray& out, const GPUArray* a, const GPUArray* b,
                          const unsigned char* scalar);
/// out = op(a); a shares out's dtype and shape (possibly with other strides).
absl::Status LaunchUnary(UnaryOp op, const GPUArray& out, const GPUArray& a);
absl::Status LaunchMatmul(const MatmulProblem& problem, Device device, KeepAlive keep);
/// problem's output = its epilogue applied to `src`, a plain product (float32 / float64) laid
/// out like the output. CUDA only: the CPU backend always fuses.
absl::Status LaunchGemmEpilogue(const MatmulProblem& problem, const GPUArray& src);

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
absl::Status Copy(hal::Stream& s, DType src, DType dst, const kernels::ElementwiseParams& p,
                  KeepAlive keep);
absl::Status Fill(hal::Stream& s, int itemsize, const kernels::ElementwiseParams& p,
                  KeepAlive keep);
absl::Status Arange(hal::Stream& s, DType dtype, const kernels::ArangeParams& p, KeepAlive keep);
absl::Status Binary(hal::Stream& s, BinaryOp op, DType dtype, const kernels::ElementwiseParams& p,
                    KeepAlive keep);
absl::Status Unary(hal::Stream& s, UnaryOp op, DType dtype, const kernels::ElementwiseParams& p,
                   KeepAlive keep);
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, KeepAlive keep);
}  // namespace cpu_kernels

namespace cuda_kernels {
absl::Status Copy(hal::Stream& s, DType src, DType dst, const kernels::ElementwiseParams& p);
absl::Status Fill(hal::Stream& s, int itemsize, const kernels::ElementwiseParams& p);
absl::Status Arange(hal::Stream& s, DType dtype, const kernels::ArangeParams& p);
absl::Status Binary(hal::Stream& s, BinaryOp op, DType dtype, const kernels::ElementwiseParams& p);
absl::Status Unary(hal::Stream& s, UnaryOp op, DType dtype, const kernels::ElementwiseParams& p);
/// Matmul on a CUDA device: selects a kernel family (ops/gemm_select.h) and launches it.
/// UnimplementedError when the selection cannot fuse the requested epilogue (the op layer then
/// runs the product and the epilogue separately).
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, Device device);
/// cuBLASLt-backed plain matmul; dtypes float16/bfloat16/float32/float64/complex64/complex128,
/// output in the input dtype or float32 for 16-bit inputs.
absl::Status MatmulCublasLt(hal::Stream& s, const MatmulProblem& p, Device device);
/// out = epilogue(src) elementwise, where src (float32, or float64 for float64 outputs) holds a
/// plain product laid out like out (for the unfused epilogue path).
absl::Status GemmEpilogueApply(hal::Stream& s, const MatmulProblem& p, const void* src,
                               DType src_dtype);
}  // namespace cuda_kernels

/// Name of a binary op for messages and kernel symbols ("add", ...).
absl::string_view BinaryOpName(BinaryOp op);
/// Name of a unary op for messages and kernel symbols ("negative").
absl::string_view UnaryOpName(UnaryOp op);

}  // namespace pygpukit::ops
