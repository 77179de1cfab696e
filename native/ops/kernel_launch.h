// Internal: the kernel families ops launch, and their per-backend implementations. Op
// definitions (creation.cc, arith.cc, ...) call the Launch* functions, which build the shared
// parameter blocks and route to cpu/ or cuda/ by the arrays' device; the backends hand the work
// to the dispatcher.
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
#include "ops/elementwise_codegen.h"
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

// ---- routing by device (kernel_launch.cc) ----
/// One elementwise function application, checked and promoted by the op layer.
struct EwLaunch {
  ElementwiseOp op;
  absl::string_view name;
  DType compute;  // the dtype the function computes in
  DType result;   // its result dtype (the output array may have another: converted on store)
  struct Input {
    const GPUArray* array = nullptr;  // null: a scalar, encoded in `scalar`
    DType compute = DType::Float32;  // the dtype this operand converts to (where's condition: bool)
    alignas(16) unsigned char scalar[16] = {};
  };
  absl::InlinedVector<Input, 3> inputs;
};
/// out = op(inputs) elementwise: arrays broadcast to out's shape and convert to their compute
/// dtype, the result converts to out's dtype. `out` may overlap the inputs (an overlap other
/// than identical elements computes into a temporary first). CUDA: a JIT kernel specialized for
/// the dtypes and layout; without NVRTC, the precompiled add / subtract / multiply / divide /
/// negative kernels (other functions raise NotImplementedError saying why).
absl::Status LaunchElementwise(const EwLaunch& launch, const GPUArray& out);
/// Precompiled path (no JIT): out = a op b with a or b possibly absent (a scalar in `scalar`,
/// in out's dtype); arrays share out's dtype and shape (with broadcast strides). add, subtract,
/// multiply, divide only.
absl::Status LaunchBinary(ElementwiseOp op, const GPUArray& out, const GPUArray* a,
                          const GPUArray* b, const unsigned char* scalar);
/// Precompiled path: out = -a; a shares out's dtype and shape.
absl::Status LaunchNegative(const GPUArray& out, const GPUArray& a);
/// A user elementwise kernel (gp.ElementwiseKernel), typed by the op layer: `spec` holds the
/// body, the parameter names and dtypes (its layout fields are set per launch); scalar inputs
/// are passed as their bytes in their dtype.
struct UserEwLaunch {
  EwKernelSpec spec;
  absl::InlinedVector<DType, 4> scalar_dtypes;  // per input (the dtype of a scalar input)
  absl::InlinedVector<std::array<unsigned char, 16>, 4> scalars;  // per input
};
/// outs (one or more, of one shape) = the user kernel over `inputs` (arrays of that shape,
/// broadcast views allowed; invalid entries stand for the scalars). An output overlapping an
/// input other than element for element is computed through a temporary; outputs sharing memory
/// are a ValueError. CPU: compiled by the host compiler; CUDA: by NVRTC.
absl::Status LaunchUserElementwise(const UserEwLaunch& l, absl::Span<const GPUArray> inputs,
                                   absl::Span<const GPUArray> outs);

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
/// The function `l.op` in `l.compute` over inputs already converted to their compute dtypes,
/// into an output of dtype `l.result`.
absl::Status Elementwise(hal::Stream& s, const EwLaunch& l, const EwCpuArgs& args, KeepAlive keep);
absl::Status Matmul(hal::Stream& s, const MatmulProblem& p, KeepAlive keep);
/// The user kernel `l` through the host compiler (runtime/host_jit.h).
absl::Status UserElementwise(hal::Stream& s, const UserEwLaunch& l, absl::Span<const GPUArray> outs,
                             absl::Span<const GPUArray> inputs, KeepAlive keep);
}  // namespace cpu_kernels

namespace cuda_kernels {
absl::Status Binary(hal::Stream& s, ElementwiseOp op, DType dtype,
                    const kernels::ElementwiseParams& p);
absl::Status Negative(hal::Stream& s, DType dtype, const kernels::ElementwiseParams& p);
/// The JIT kernel of `l` (ops/elementwise_codegen.h): inputs in their own dtypes (of out's shape
/// or broadcast to it; null for scalars), converted in the kernel; the result stored as out's
/// dtype.
absl::Status ElementwiseJit(hal::Stream& s, const EwLaunch& l, const GPUArray& out,
                            absl::Span<const GPUArray* const> inputs);
/// dst = src converted to dst's dtype (shapes equal; src may have broadcast strides) through a
/// JIT kernel (16-byte accesses on dense operands).
absl::Status CopyJit(hal::Stream& s, const GPUArray& src, const GPUArray& dst);
/// The user kernel `l` through NVRTC (the elementwise generator with the user's body).
absl::Status UserElementwiseJit(hal::Stream& s, const UserEwLaunch& l,
                                absl::Span<const GPUArray> outs, absl::Span<const GPUArray> inputs);
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
