// Routing of elementwise functions to the backends (LaunchElementwise): operand views, overlap
// between the output and the inputs, the CPU kernels, the CUDA JIT and its precompiled fallback.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

// First and one-past-last byte an array's elements occupy, relative to its buffer.
std::pair<int64_t, int64_t> ByteRange(const GPUArray& a) {
  int64_t lo = a.offset(), hi = a.offset();
  for (int d = 0; d < a.ndim(); ++d) {
    const int64_t span = (a.shape()[d] - 1) * a.strides()[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo * a.itemsize(), (hi + 1) * a.itemsize()};
}

// Whether a and b may have a byte in common: their byte ranges intersect and their element
// addresses are not kept apart by the strides' common divisor (interleaved views, such as
// x[::2] and x[1::2], are disjoint).
bool MayShareMemory(const GPUArray& a, const GPUArray& b) {
  if (a.buffer() != b.buffer() || a.size() == 0 || b.size() == 0) return false;
  const auto [a0, a1] = ByteRange(a);
  const auto [b0, b1] = ByteRange(b);
  if (a1 <= b0 || b1 <= a0) return false;
  // Every difference of element addresses is (a's offset - b's offset) modulo g.
  int64_t g = 0;
  for (const GPUArray* x : {&a, &b}) {
    for (int d = 0; d < x->ndim(); ++d) {
      if (x->shape()[d] > 1) g = std::gcd(g, x->strides()[d] * x->itemsize());
    }
  }
  if (g == 0) return true;  // two single elements whose bytes intersect
  const int64_t r = (((a.offset() * a.itemsize() - b.offset() * b.itemsize()) % g) + g) % g;
  // a's element starts r bytes (mod g) after b's: disjoint when neither reaches into the other.
  return !(r >= b.itemsize() && g - r >= a.itemsize());
}

// Whether writing `out` element by element could change what `in` reads later: they share
// memory and element i of `in` is not exactly element i of `out` (same address, same dtype).
bool Conflicts(const GPUArray& out, const GPUArray& in) {
  if (!MayShareMemory(out, in)) return false;
  if (in.dtype() != out.dtype() || in.offset() != out.offset()) return true;
  for (int d = 0; d < out.ndim(); ++d) {
    if (out.shape()[d] != 1 && in.strides()[d] != out.strides()[d]) return true;
  }
  return false;
}

// The operands of a kernel that computes in one dtype: array inputs converted to their compute
// dtypes and broadcast to out's shape (invalid arrays stand for scalars), and where the result
// goes: `out`, or a temporary of the result dtype when out has another dtype or overlaps an
// input other than element for element (then copied into out afterwards).
struct CastFirst {
  absl::InlinedVector<GPUArray, 3> inputs;
  GPUArray dst;
  bool temporary = false;
};

absl::StatusOr<CastFirst> ConvertInputs(const EwLaunch& l, const GPUArray& out) {
  CastFirst c;
  c.temporary = out.dtype() != l.result;
  for (const EwLaunch::Input& in : l.inputs) {
    GPUArray v;
    if (in.array != nullptr) {
      PGK_ASSIGN_OR_RETURN(GPUArray cast, AsType(*in.array, in.compute, /*copy=*/false));
      PGK_ASSIGN_OR_RETURN(v, BroadcastTo(cast, out.shape()));
      c.temporary = c.temporary || Conflicts(out, v);
    }
    c.inputs.push_back(std::move(v));
  }
  c.dst = out;
  if (c.temporary) {
    PGK_ASSIGN_OR_RETURN(c.dst, NewArray(out.shape(), l.result, out.device(), l.name));
  }
  return c;
}

absl::Status LaunchCpu(const EwLaunch& l, const GPUArray& out) {
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
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident(absl::MakeConstSpan(arrays)));
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
  KeepAlive keep = {dst.buffer()};
  for (int i = 0; i < args.ninputs; ++i) {
    if (inputs[i].valid()) {
      args.in[i] = inputs[i].data();
      std::copy(layout.strides[k].begin(), layout.strides[k].end(), args.in_strides[i]);
      args.contiguous = args.contiguous && dense(layout.strides[k]);
      keep.push_back(inputs[i].buffer());
      ++k;
    } else {
      args.in_scalar[i] = true;
      std::memcpy(args.scalars[i], l.inputs[i].scalar, 16);
    }
  }
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(dst.device()));
  PGK_RETURN_IF_ERROR(cpu_kernels::Elementwise(*s, l, args, std::move(keep)));
  if (conflict) return Assign(out, dst);
  return absl::OkStatus();
}

// Without NVRTC: the precompiled kernels, which compute in one dtype (operands converted
// first) and exist for the arithmetic operators only.
absl::Status LaunchCudaPrecompiled(const EwLaunch& l, const GPUArray& out, absl::Status why) {
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
    PGK_RETURN_IF_ERROR(LaunchNegative(dst, inputs[0]));
  } else {
    const GPUArray* a = inputs[0].valid() ? &inputs[0] : nullptr;
    const GPUArray* b = inputs[1].valid() ? &inputs[1] : nullptr;
    const unsigned char* scalar = a == nullptr ? l.inputs[0].scalar : l.inputs[1].scalar;
    PGK_RETURN_IF_ERROR(LaunchBinary(l.op, dst, a, b, scalar));
  }
  if (conflict) return Assign(out, dst);
  return absl::OkStatus();
}

absl::Status LaunchCuda(const EwLaunch& l, const GPUArray& out) {
  Runtime& rt = Runtime::Get();
  if (absl::Status available = rt.jit().Available(); !available.ok()) {
    return LaunchCudaPrecompiled(l, out, available);
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
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, rt.stream(out.device()));
  if (!conflict) return cuda_kernels::ElementwiseJit(*s, l, out, inputs);
  PGK_ASSIGN_OR_RETURN(GPUArray dst, NewArray(out.shape(), out.dtype(), out.device(), l.name));
  PGK_RETURN_IF_ERROR(cuda_kernels::ElementwiseJit(*s, l, dst, inputs));
  return Assign(out, dst);
}

}  // namespace

absl::Status LaunchUserElementwise(const UserEwLaunch& l, absl::Span<const GPUArray> inputs,
                                   absl::Span<const GPUArray> outs) {
  if (outs.empty()) return RuntimeError(absl::StrCat(l.spec.name, ": no output"));
  const GPUArray& out = outs[0];
  for (const GPUArray& o : outs) {
    if (absl::Span<const int64_t>(o.shape()) != absl::Span<const int64_t>(out.shape())) {
      return RuntimeError(absl::StrCat(l.spec.name, ": outputs of shapes ",
                                       ShapeToString(out.shape()), " and ",
                                       ShapeToString(o.shape())));
    }
  }
  if (out.size() == 0) return absl::OkStatus();
  Runtime& rt = Runtime::Get();
  if (!out.device().is_cpu()) {
    if (absl::Status jit = rt.jit().Available(); !jit.ok()) {
      return NotImplementedError(absl::StrCat(l.spec.name, " on ", out.device().ToString(),
                                              " needs the NVRTC JIT, which is unavailable (",
                                              jit.message(), ")"));
    }
  }
  // Outputs sharing memory would race (several threads writing one element).
  for (size_t j = 0; j < outs.size(); ++j) {
    for (size_t k = 0; k < j; ++k) {
      if (MayShareMemory(outs[j], outs[k])) {
        auto name = [&](size_t i) {
          const size_t at = l.spec.inputs.size() + i;
          return at < l.spec.names.size() ? absl::StrCat("\"", l.spec.names[at], "\"")
                                          : absl::StrCat(i);
        };
        return ValueError(absl::StrCat(l.spec.name, ": outputs ", name(k), " and ", name(j),
                                       " (shape ", ShapeToString(outs[j].shape()),
                                       ") may share memory"));
      }
    }
  }
  // An output that overlaps an input other than element for element is computed into a
  // temporary and copied afterwards.
  absl::InlinedVector<GPUArray, 2> dsts(outs.begin(), outs.end());
  absl::InlinedVector<bool, 2> temporary(outs.size(), false);
  absl::InlinedVector<const GPUArray*, 6> arrays;
  for (const GPUArray& in : inputs) {
    if (in.valid()) arrays.push_back(&in);
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    for (const GPUArray& in : inputs) {
      temporary[j] = temporary[j] || (in.valid() && Conflicts(outs[j], in));
    }
    if (temporary[j]) {
      PGK_ASSIGN_OR_RETURN(dsts[j],
                           NewArray(outs[j].shape(), outs[j].dtype(), out.device(), l.spec.name));
      // The body may read the output's values (spec.read_outputs).
      if (l.spec.read_outputs) PGK_RETURN_IF_ERROR(Assign(dsts[j], outs[j]));
    }
    arrays.push_back(&dsts[j]);
  }
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident(absl::MakeConstSpan(arrays)));
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, rt.stream(out.device()));
  if (out.device().is_cpu()) {
    KeepAlive keep;
    for (const GPUArray* a : arrays) keep.push_back(a->buffer());
    PGK_RETURN_IF_ERROR(cpu_kernels::UserElementwise(*s, l, dsts, inputs, std::move(keep)));
  } else {
    PGK_RETURN_IF_ERROR(cuda_kernels::UserElementwiseJit(*s, l, dsts, inputs));
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    if (temporary[j]) PGK_RETURN_IF_ERROR(Assign(outs[j], dsts[j]));
  }
  return absl::OkStatus();
}

absl::Status LaunchElementwise(const EwLaunch& l, const GPUArray& out) {
  if (out.size() == 0) return absl::OkStatus();
  if (out.device().is_cpu()) return LaunchCpu(l, out);
  return LaunchCuda(l, out);
}

}  // namespace pygpukit::ops
