// Internal: the kernel families ops launch, and their per-backend implementations. Op
// definitions (creation.cc, arith.cc, ...) call the Launch* functions, which build the shared
// parameter blocks and route to cpu/ or cuda/ by the arrays' device; the backends hand the work
// to the dispatcher.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/hal/backend.h"
#include "ops/array.h"
#include "ops/kernels/params.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// Elementwise one-operand ops with a kernel of their own.
enum class UnaryOp { kNegative };

/// One (batched) matrix product C = A @ B. Element (b, i, j) of X lives at
/// x + b * x_batch + i * x_row + j * x_col (element strides); all operands share `dtype`.
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
};

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

/// Holds the arrays' buffers resident (paging spilled ones back in) while the caller reads
/// their device addresses and enqueues work on them.
absl::StatusOr<ResidencyPin> Resident(std::initializer_list<const GPUArray*> arrays);

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
/// cuBLASLt-backed matmul; dtypes float16/bfloat16/float32/float64/complex64/complex128.
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, Device device);
}  // namespace cuda_kernels

/// Name of a binary op for messages and kernel symbols ("add", ...).
absl::string_view BinaryOpName(BinaryOp op);
/// Name of a unary op for messages and kernel symbols ("negative").
absl::string_view UnaryOpName(UnaryOp op);

}  // namespace pygpukit::ops
