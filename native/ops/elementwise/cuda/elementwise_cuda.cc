// The CUDA implementation of the elementwise functions and user kernels: the JIT kernels
// (elementwise_jit_cuda.cc), which convert as they load; without NVRTC the precompiled
// arithmetic kernels of elementwise.cu (operands converted first).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/cuda/elementwise_jit.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/launch/cuda_launch.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/launch/layout.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

using kernels::ElementwiseParams;

// out = a op b with a or b possibly absent (a scalar in `scalar`, in out's dtype); arrays share
// out's dtype and shape (with broadcast strides). add, subtract, multiply, divide only.
absl::Status Binary(LaunchContext& ctx, ElementwiseOp op, const GPUArray& out, const GPUArray* a,
                    const GPUArray* b, const unsigned char* scalar) {
  if (out.size() == 0) return absl::OkStatus();
  for (const GPUArray* x : {&out, a, b}) {
    if (x != nullptr) PGK_RETURN_IF_ERROR(ctx.Use(*x));
  }
  ElementwiseParams p;
  PGK_RETURN_IF_ERROR(ElementwiseParamsOf(out, a, b, p, ElementwiseOpName(op)));
  if (a == nullptr) p.scalar_operand = kernels::kScalarA;
  if (b == nullptr) p.scalar_operand = kernels::kScalarB;
  if (scalar != nullptr) std::memcpy(p.scalar, scalar, out.itemsize());
  const DType dtype = out.dtype();
  if (op == ElementwiseOp::kDivide && (IsInteger(dtype) || dtype == DType::Bool)) {
    return TypeError("divide: integer operands must be promoted before the kernel");
  }
  return LaunchGridStride(ctx, absl::StrCat("pgk_", ElementwiseOpName(op), "_", DTypeCode(dtype)),
                          p.n, p);
}

// out = -a; a shares out's dtype and shape.
absl::Status Negative(LaunchContext& ctx, const GPUArray& out, const GPUArray& a) {
  if (out.size() == 0) return absl::OkStatus();
  PGK_RETURN_IF_ERROR(ctx.Use(out));
  PGK_RETURN_IF_ERROR(ctx.Use(a));
  ElementwiseParams p;
  PGK_RETURN_IF_ERROR(ElementwiseParamsOf(out, &a, nullptr, p, "negative"));
  if (out.dtype() == DType::Bool) {
    return TypeError("negative: boolean operands are rejected before kernels");
  }
  return LaunchGridStride(ctx, absl::StrCat("pgk_negative_", DTypeCode(out.dtype())), p.n, p);
}

// Without NVRTC: the precompiled kernels, which compute in one dtype (operands converted
// first) and exist for the arithmetic operators only.
absl::Status Precompiled(LaunchContext& ctx, const EwLaunch& l, const GPUArray& out,
                         absl::Status why) {
  const bool arithmetic = l.op == ElementwiseOp::kAdd || l.op == ElementwiseOp::kSubtract ||
                          l.op == ElementwiseOp::kMultiply || l.op == ElementwiseOp::kDivide ||
                          l.op == ElementwiseOp::kNegative;
  const bool any_array = std::any_of(l.inputs.begin(), l.inputs.end(),
                                     [](const EwLaunch::Input& in) { return in.array != nullptr; });
  if (!arithmetic || !any_array) {
    return NotImplementedError(absl::StrCat(
        l.name, " on ", out.device().ToString(), " needs the NVRTC JIT, which is unavailable (",
        why.message(), "); install the CUDA runtime compiler (libnvrtc) or use the CPU backend"));
  }
  PGK_ASSIGN_OR_RETURN(CastFirst c, ConvertInputs(l, out));
  const auto& inputs = c.inputs;
  const GPUArray& dst = c.dst;
  const bool conflict = c.temporary;
  if (l.op == ElementwiseOp::kNegative) {
    PGK_RETURN_IF_ERROR(Negative(ctx, dst, inputs[0]));
  } else {
    const GPUArray* a = inputs[0].valid() ? &inputs[0] : nullptr;
    const GPUArray* b = inputs[1].valid() ? &inputs[1] : nullptr;
    const unsigned char* scalar = a == nullptr ? l.inputs[0].scalar : l.inputs[1].scalar;
    PGK_RETURN_IF_ERROR(Binary(ctx, l.op, dst, a, b, scalar));
  }
  if (conflict) return Assign(out, dst);
  return absl::OkStatus();
}

absl::Status ElementwiseCuda(LaunchContext& ctx, const EwLaunch& l, const GPUArray& out) {
  Runtime& rt = Runtime::Get();
  if (absl::Status available = rt.jit().Available(); !available.ok()) {
    return Precompiled(ctx, l, out, available);
  }
  // Inputs by address; only broadcast views are built (the common case has none to build).
  absl::InlinedVector<GPUArray, 3> views;
  views.reserve(l.inputs.size());  // the addresses below stay valid
  absl::InlinedVector<const GPUArray*, 3> inputs;
  bool conflict = false;
  for (const EwLaunch::Input& in : l.inputs) {
    const GPUArray* v = in.array;
    if (v != nullptr) {
      if (v->shape() != out.shape()) {
        PGK_ASSIGN_OR_RETURN(GPUArray view, BroadcastTo(*v, out.shape()));
        views.push_back(std::move(view));
        v = &views.back();
      }
      conflict = conflict || Conflicts(out, *v);
    }
    inputs.push_back(v);
  }
  if (!conflict) return ElementwiseJit(ctx, l, out, inputs);
  PGK_ASSIGN_OR_RETURN(GPUArray dst, NewArray(out.shape(), out.dtype(), out.device(), l.name));
  PGK_RETURN_IF_ERROR(ElementwiseJit(ctx, l, dst, inputs));
  return Assign(out, dst);
}

absl::Status UserElementwiseCuda(LaunchContext& ctx, const UserEwLaunch& l,
                                 absl::Span<const GPUArray> outs,
                                 absl::Span<const GPUArray> inputs) {
  if (absl::Status jit = Runtime::Get().jit().Available(); !jit.ok()) {
    return NotImplementedError(absl::StrCat(l.spec.name, " on ", ctx.device().ToString(),
                                            " needs the NVRTC JIT, which is unavailable (",
                                            jit.message(), ")"));
  }
  return UserElementwiseJit(ctx, l, outs, inputs);
}

PGK_REGISTER_KERNEL(kElementwiseKernel, kCuda, ElementwiseCuda);
PGK_REGISTER_KERNEL(kUserElementwiseKernel, kCuda, UserElementwiseCuda);

}  // namespace
}  // namespace pygpukit::ops
