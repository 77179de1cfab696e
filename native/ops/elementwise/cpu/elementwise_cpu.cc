// The CPU implementation of the elementwise functions: inputs converted to their compute dtypes
// first (the same Cast a fused conversion applies), so the loops are instantiated per compute
// dtype only; an output of another dtype or overlapping an input is computed into a temporary.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/elementwise/cpu/elementwise_loop_cpu.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

// The loop of l's arity.
absl::Status ElementwiseOfArity(LaunchContext& ctx, const EwLaunch& l, const EwCpuArgs& args) {
  switch (l.inputs.size()) {
    case 1:
      return ElementwiseUnary(ctx, l, args);
    case 2:
      return ElementwiseBinary(ctx, l, args);
    case 3:
      return ElementwiseTernary(ctx, l, args);
  }
  return RuntimeError(absl::StrCat(l.name, ": ", l.inputs.size(), " operands"));
}

absl::Status ElementwiseCpu(LaunchContext& ctx, const EwLaunch& l, const GPUArray& out) {
  // Inputs converted to their compute dtypes first (the same Cast a fused conversion applies),
  // so the CPU kernels are instantiated per compute dtype only.
  PGK_ASSIGN_OR_RETURN(CastFirst c, ConvertInputs(l, out));
  const auto& inputs = c.inputs;
  const GPUArray& dst = c.dst;
  const bool conflict = c.temporary;

  absl::InlinedVector<const GPUArray*, 4> arrays = {&dst};
  absl::InlinedVector<absl::Span<const int64_t>, 4> strides = {dst.strides()};
  for (const GPUArray& v : inputs) {
    if (!v.valid()) continue;
    arrays.push_back(&v);
    strides.push_back(v.strides());
  }
  for (const GPUArray* a : arrays) PGK_RETURN_IF_ERROR(ctx.Use(*a));
  CoalescedLayout layout = Coalesce(dst.shape(), strides);
  if (layout.shape.size() > static_cast<size_t>(kernels::kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat(l.name, ": operand layout has ", layout.shape.size(),
                                            " non-mergeable dimensions; kernels support ",
                                            kernels::kKernelMaxDims));
  }
  EwCpuArgs args;
  args.n = dst.size();
  args.cost = ElementwiseCost(arrays, args.n);
  args.ndim = static_cast<int>(layout.shape.size());
  std::copy(layout.shape.begin(), layout.shape.end(), args.shape);
  std::copy(layout.strides[0].begin(), layout.strides[0].end(), args.out_strides);
  args.out = dst.data();
  args.ninputs = static_cast<int>(l.inputs.size());
  auto dense = [&](absl::Span<const int64_t> s) {
    return args.ndim == 0 || (args.ndim == 1 && s[0] == 1);
  };
  args.contiguous = dense(layout.strides[0]);
  size_t k = 1;
  for (int i = 0; i < args.ninputs; ++i) {
    if (inputs[i].valid()) {
      args.in[i] = inputs[i].data();
      std::copy(layout.strides[k].begin(), layout.strides[k].end(), args.in_strides[i]);
      args.contiguous = args.contiguous && dense(layout.strides[k]);
      ++k;
    } else {
      args.in_scalar[i] = true;
      std::memcpy(args.scalars[i], l.inputs[i].scalar, 16);
    }
  }
  PGK_RETURN_IF_ERROR(ElementwiseOfArity(ctx, l, args));
  if (conflict) return Assign(out, dst);
  return absl::OkStatus();
}

PGK_REGISTER_KERNEL(kElementwiseKernel, kCpu, ElementwiseCpu);

}  // namespace
}  // namespace pygpukit::ops
