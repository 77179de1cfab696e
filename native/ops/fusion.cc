// Fused elementwise expressions (gp.fuse): each node typed as Elementwise would type it, one
// generated body that keeps every intermediate in its result dtype, run as a user kernel
// (ops/kernel_launch.h: NVRTC on CUDA, the host compiler on the CPU).
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/ops.h"

namespace pygpukit::ops {

absl::StatusOr<GPUArray> RunFused(const FusedExpr& e, absl::Span<const EwOperand> inputs) {
  if (static_cast<int>(inputs.size()) != e.inputs) {
    return TypeError(absl::StrCat(e.name, ": takes ", e.inputs, " inputs, got ", inputs.size()));
  }
  if (e.nodes.empty()) return ValueError(absl::StrCat(e.name, ": the expression has no operation"));
  // The inputs the expression reads (an unused argument does not take part, as unfused).
  std::vector<bool> used(inputs.size(), false);
  for (const FusedNode& n : e.nodes) {
    for (const FusedArg& a : n.args) {
      if (a.kind == FusedArg::Kind::kInput && a.index >= 0 && a.index < e.inputs) {
        used[a.index] = true;
      }
    }
  }
  // The broadcast shape and device of the array inputs.
  Shape shape;
  std::optional<Device> device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EwOperand& in = inputs[i];
    if (in.array == nullptr || !used[i]) continue;
    if (!device.has_value()) {
      device = in.array->device();
      shape.assign(in.array->shape().begin(), in.array->shape().end());
      continue;
    }
    if (in.array->device() != *device) {
      return ValueError(absl::StrCat(e.name, ": inputs on ", device->ToString(), " and ",
                                     in.array->device().ToString()));
    }
    PGK_ASSIGN_OR_RETURN(shape, BroadcastShapes(shape, in.array->shape(), e.name));
  }
  if (!device.has_value()) return TypeError(absl::StrCat(e.name, ": needs an array input"));

  // Kernel parameters: the array inputs (a0, ...), then one by-value scalar per use of a
  // Python scalar (s0, ...), encoded in the dtype its node converts it to.
  UserEwLaunch l;
  l.spec.name = e.name;
  absl::InlinedVector<GPUArray, 4> views;
  std::vector<int> array_param(inputs.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].array == nullptr || !used[i]) continue;
    array_param[i] = static_cast<int>(views.size());
    PGK_ASSIGN_OR_RETURN(GPUArray v, BroadcastTo(*inputs[i].array, shape));
    views.push_back(std::move(v));
    const DType dt = inputs[i].array->dtype();
    l.spec.inputs.push_back(EwInput{dt, false});
    l.spec.names.push_back(absl::StrCat("a", array_param[i]));
    l.scalar_dtypes.push_back(dt);
    l.scalars.push_back({});
  }
  std::vector<DType> node_dtype;
  std::string body;
  int scalars = 0;
  for (size_t k = 0; k < e.nodes.size(); ++k) {
    const FusedNode& n = e.nodes[k];
    if (n.op == ElementwiseOp::kClip) {
      // clip keeps x's dtype and clamps integer bounds (ops::Clip), which node typing does not.
      return NotImplementedError(absl::StrCat(e.name, ": clip cannot be fused"));
    }
    absl::InlinedVector<std::optional<DType>, 3> dtypes;
    absl::InlinedVector<ScalarKind, 3> kinds;
    for (const FusedArg& a : n.args) {
      if (a.kind == FusedArg::Kind::kNode) {
        if (a.index < 0 || a.index >= static_cast<int>(k)) {
          return ValueError(absl::StrCat(e.name, ": node ", k, " uses node ", a.index));
        }
        dtypes.push_back(node_dtype[a.index]);
        kinds.push_back(ScalarKind::Float);
      } else if (a.kind == FusedArg::Kind::kInput) {
        if (a.index < 0 || a.index >= e.inputs) {
          return ValueError(absl::StrCat(e.name, ": node ", k, " uses input ", a.index));
        }
        const EwOperand& in = inputs[a.index];
        dtypes.push_back(in.array != nullptr ? std::optional<DType>(in.array->dtype())
                                             : std::nullopt);
        kinds.push_back(in.scalar.kind);
      } else {
        dtypes.push_back(std::nullopt);
        kinds.push_back(a.constant.kind);
      }
    }
    PGK_ASSIGN_OR_RETURN(EwTyping t, TypeElementwise(n.op, dtypes, kinds));
    std::string args;
    for (size_t j = 0; j < n.args.size(); ++j) {
      const FusedArg& a = n.args[j];
      std::string value;
      if (a.kind == FusedArg::Kind::kNode) {
        value = absl::StrCat("t", a.index);
      } else if (a.kind == FusedArg::Kind::kInput && inputs[a.index].array != nullptr) {
        value = absl::StrCat("a", array_param[a.index]);
      } else {
        // A weak scalar: converted to the node's compute dtype, as Elementwise encodes it.
        const Scalar& s = a.kind == FusedArg::Kind::kConstant ? a.constant : inputs[a.index].scalar;
        std::array<unsigned char, 16> bytes = {};
        PGK_RETURN_IF_ERROR(EncodeScalar(s, t.compute[j], bytes.data(), e.name));
        value = absl::StrCat("s", scalars++);
        l.spec.inputs.push_back(EwInput{t.compute[j], true});
        l.spec.names.push_back(value);
        l.scalar_dtypes.push_back(t.compute[j]);
        l.scalars.push_back(bytes);
        views.emplace_back();
      }
      absl::StrAppend(&args, j > 0 ? ", " : "", "Cast<", EwTypeName(t.compute[j]), ">(", value,
                      ")");
      l.spec.needs_complex = l.spec.needs_complex || IsComplex(t.compute[j]);
    }
    const char* r = EwTypeName(t.result);
    absl::StrAppend(&body, "const ", r, " t", k, " = Cast<", r, ">(", EwFunctorName(n.op),
                    "::Apply(", args, "));\n  ");
    node_dtype.push_back(t.result);
    l.spec.needs_complex = l.spec.needs_complex || IsComplex(t.result);
  }
  const DType out_dt = node_dtype.back();
  absl::StrAppend(&body, "pgk_out = t", e.nodes.size() - 1, ";");
  l.spec.body = std::move(body);
  l.spec.output = out_dt;
  l.spec.names.push_back("pgk_out");
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray(shape, out_dt, *device, e.name));
  PGK_RETURN_IF_ERROR(LaunchUserElementwise(l, views, out));
  return out;
}

}  // namespace pygpukit::ops
