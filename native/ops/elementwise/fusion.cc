// Fused elementwise expressions (gp.fuse): each node typed as Elementwise would type it, one
// generated body that keeps every intermediate in its result dtype, run as a user kernel
// (NVRTC on CUDA, the host compiler on the CPU).
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

// What the unfused call of a node would give: its dtypes, and its shape and device (the
// broadcast of its operands').
struct NodeInfo {
  EwTyping typing;
  Shape shape;
  std::optional<Device> device;  // none: no array operand
};

// Types and shapes every node (used by a result or not: an unfused call would raise the same
// errors), checking its operand references.
absl::StatusOr<std::vector<NodeInfo>> TypeNodes(const FusedExpr& e,
                                                absl::Span<const EwOperand> inputs) {
  std::vector<NodeInfo> info;
  for (size_t k = 0; k < e.nodes.size(); ++k) {
    const FusedNode& n = e.nodes[k];
    if (n.op == ElementwiseOp::kClip) {
      // clip keeps x's dtype and clamps integer bounds (ops::Clip), which node typing does not.
      return NotImplementedError(absl::StrCat(e.name, ": clip cannot be fused"));
    }
    NodeInfo node;
    absl::InlinedVector<std::optional<DType>, 3> dtypes;
    absl::InlinedVector<ScalarKind, 3> kinds;
    // An array operand's shape and device join the node's.
    auto join = [&](absl::Span<const int64_t> shape, const Device& device) -> absl::Status {
      if (!node.device.has_value()) {
        node.shape.assign(shape.begin(), shape.end());
        node.device = device;
        return absl::OkStatus();
      }
      if (device != *node.device) {
        return ValueError(absl::StrCat(e.name, ": ", ElementwiseOpName(n.op), " of arrays on ",
                                       node.device->ToString(), " and ", device.ToString()));
      }
      PGK_ASSIGN_OR_RETURN(
          node.shape,
          BroadcastShapes(node.shape, shape, absl::StrCat(e.name, ": ", ElementwiseOpName(n.op))));
      return absl::OkStatus();
    };
    for (const FusedArg& a : n.args) {
      if (a.kind == FusedArg::Kind::kNode) {
        if (a.index < 0 || a.index >= static_cast<int>(k)) {
          return ValueError(absl::StrCat(e.name, ": node ", k, " uses node ", a.index));
        }
        const NodeInfo& from = info[a.index];
        dtypes.push_back(from.typing.result);
        kinds.push_back(ScalarKind::Float);
        if (from.device.has_value()) PGK_RETURN_IF_ERROR(join(from.shape, *from.device));
      } else if (a.kind == FusedArg::Kind::kInput) {
        if (a.index < 0 || a.index >= e.inputs) {
          return ValueError(absl::StrCat(e.name, ": node ", k, " uses input ", a.index));
        }
        const EwOperand& in = inputs[a.index];
        dtypes.push_back(in.array != nullptr ? std::optional<DType>(in.array->dtype())
                                             : std::nullopt);
        kinds.push_back(in.scalar.kind);
        if (in.array != nullptr) PGK_RETURN_IF_ERROR(join(in.array->shape(), in.array->device()));
      } else {
        dtypes.push_back(std::nullopt);
        kinds.push_back(a.constant.kind);
      }
    }
    PGK_ASSIGN_OR_RETURN(node.typing, TypeElementwise(n.op, dtypes, kinds));
    // Python scalars must fit the dtype they convert to (OverflowError, as unfused).
    for (size_t j = 0; j < n.args.size(); ++j) {
      const FusedArg& a = n.args[j];
      if (a.kind == FusedArg::Kind::kNode) continue;
      if (a.kind == FusedArg::Kind::kInput && inputs[a.index].array != nullptr) continue;
      const Scalar& s = a.kind == FusedArg::Kind::kConstant ? a.constant : inputs[a.index].scalar;
      unsigned char bytes[16];
      PGK_RETURN_IF_ERROR(EncodeScalar(s, node.typing.compute[j], bytes, e.name));
    }
    info.push_back(std::move(node));
  }
  return info;
}

// The nodes `roots` depend on (live) and the inputs those read (used).
struct Reach {
  std::vector<bool> live, used;
};
Reach ReachOf(const FusedExpr& e, absl::Span<const int> roots) {
  Reach r{std::vector<bool>(e.nodes.size(), false), std::vector<bool>(e.inputs, false)};
  for (int o : roots) r.live[o] = true;
  for (int k = static_cast<int>(e.nodes.size()) - 1; k >= 0; --k) {
    if (!r.live[k]) continue;
    for (const FusedArg& a : e.nodes[k].args) {
      if (a.kind == FusedArg::Kind::kNode) r.live[a.index] = true;
      if (a.kind == FusedArg::Kind::kInput) r.used[a.index] = true;
    }
  }
  return r;
}

// The kernel of one group of outputs for one argument signature: the launch with its spec
// (body, names, dtypes), the array inputs it reads (in parameter order) and where each scalar
// parameter's value comes from. It depends on which inputs are arrays and their dtypes, never
// on their values or shapes, so it is kept per (expression, signature, group).
struct Prepared {
  UserEwLaunch launch;      // scalar bytes filled per call
  std::vector<int> arrays;  // input index per array parameter
  struct ScalarParam {
    int param;  // its index in launch.spec.inputs
    int input;  // the input it comes from (-1: `constant`)
    Scalar constant;
    DType dtype;  // the dtype its node converts it to
  };
  std::vector<ScalarParam> scalars;
};

Prepared Prepare(const FusedExpr& e, absl::Span<const EwOperand> inputs,
                 const std::vector<NodeInfo>& info, absl::Span<const int> outputs) {
  const Reach reach = ReachOf(e, outputs);
  // Kernel parameters: the array inputs (a0, ...), then one by-value scalar per use of a
  // Python scalar (s0, ...), encoded in the dtype its node converts it to.
  Prepared p;
  UserEwLaunch& l = p.launch;
  l.spec.name = e.name;
  std::vector<int> array_param(inputs.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].array == nullptr || !reach.used[i]) continue;
    array_param[i] = static_cast<int>(p.arrays.size());
    p.arrays.push_back(static_cast<int>(i));
    const DType dt = inputs[i].array->dtype();
    l.spec.inputs.push_back(EwInput{dt, false});
    l.spec.names.push_back(absl::StrCat("a", array_param[i]));
    l.scalar_dtypes.push_back(dt);
    l.scalars.push_back({});
  }
  std::string body;
  for (size_t k = 0; k < e.nodes.size(); ++k) {
    if (!reach.live[k]) continue;
    const FusedNode& n = e.nodes[k];
    const EwTyping& t = info[k].typing;
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
        const bool constant = a.kind == FusedArg::Kind::kConstant;
        value = absl::StrCat("s", p.scalars.size());
        p.scalars.push_back({static_cast<int>(l.spec.inputs.size()), constant ? -1 : a.index,
                             constant ? a.constant : Scalar{}, t.compute[j]});
        l.spec.inputs.push_back(EwInput{t.compute[j], true});
        l.spec.names.push_back(value);
        l.scalar_dtypes.push_back(t.compute[j]);
        l.scalars.push_back({});
      }
      absl::StrAppend(&args, j > 0 ? ", " : "", "Cast<", EwTypeName(t.compute[j]), ">(", value,
                      ")");
      l.spec.needs_complex = l.spec.needs_complex || IsComplex(t.compute[j]);
    }
    const char* r = EwTypeName(t.result);
    absl::StrAppend(&body, "const ", r, " t", k, " = Cast<", r, ">(", EwFunctorName(n.op),
                    "::Apply(", args, "));\n  ");
    l.spec.needs_complex = l.spec.needs_complex || IsComplex(t.result);
  }
  l.spec.outputs.clear();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::string name = absl::StrCat("pgk_out", j);
    absl::StrAppend(&body, name, " = t", outputs[j], ";\n  ");
    l.spec.outputs.push_back(info[outputs[j]].typing.result);
    l.spec.names.push_back(name);
  }
  l.spec.body = std::move(body);
  return p;
}

// Prepared kernels by expression id, argument signature and group. Bounded: cleared when full
// (traced functions are few; a signature is a dtype pattern).
std::shared_ptr<const Prepared> Cached(const FusedExpr& e, absl::Span<const EwOperand> inputs,
                                       const std::vector<NodeInfo>& info,
                                       absl::Span<const int> outputs) {
  if (e.id == 0) return std::make_shared<const Prepared>(Prepare(e, inputs, info, outputs));
  std::string key(reinterpret_cast<const char*>(&e.id), sizeof(e.id));
  for (const EwOperand& in : inputs) {
    key.push_back(in.array != nullptr ? static_cast<char>(in.array->dtype())
                                      : static_cast<char>(0x40 | static_cast<int>(in.scalar.kind)));
  }
  key.push_back('|');
  for (int o : outputs) key.append(reinterpret_cast<const char*>(&o), sizeof(o));
  static std::mutex mu;
  static auto* cache = new absl::flat_hash_map<std::string, std::shared_ptr<const Prepared>>;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  auto p = std::make_shared<const Prepared>(Prepare(e, inputs, info, outputs));
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() >= 4096) cache->clear();
  cache->emplace(std::move(key), p);
  return p;
}

// One kernel computing the nodes `outputs` (of one shape and device) from the nodes and inputs
// they depend on.
absl::StatusOr<std::vector<GPUArray>> RunGroup(const FusedExpr& e,
                                               absl::Span<const EwOperand> inputs,
                                               const std::vector<NodeInfo>& info,
                                               absl::Span<const int> outputs) {
  const std::shared_ptr<const Prepared> p = Cached(e, inputs, info, outputs);
  const Shape& shape = info[outputs[0]].shape;
  const Device device = *info[outputs[0]].device;
  UserEwLaunch l = p->launch;
  absl::InlinedVector<GPUArray, 4> views(l.spec.inputs.size());
  for (size_t a = 0; a < p->arrays.size(); ++a) {
    PGK_ASSIGN_OR_RETURN(views[a], BroadcastTo(*inputs[p->arrays[a]].array, shape));
  }
  for (const Prepared::ScalarParam& sp : p->scalars) {
    const Scalar& v = sp.input < 0 ? sp.constant : inputs[sp.input].scalar;
    PGK_RETURN_IF_ERROR(EncodeScalar(v, sp.dtype, l.scalars[sp.param].data(), e.name));
  }
  std::vector<GPUArray> results;
  for (DType dt : l.spec.outputs) {
    PGK_ASSIGN_OR_RETURN(GPUArray r, NewArray(shape, dt, device, e.name));
    results.push_back(std::move(r));
  }
  PGK_RETURN_IF_ERROR(LaunchUserElementwise(l, views, results));
  return results;
}

}  // namespace

uint64_t NewFusedExprId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

absl::StatusOr<std::vector<GPUArray>> RunFused(const FusedExpr& e,
                                               absl::Span<const EwOperand> inputs) {
  if (static_cast<int>(inputs.size()) != e.inputs) {
    return TypeError(absl::StrCat(e.name, ": takes ", e.inputs, " inputs, got ", inputs.size()));
  }
  if (e.nodes.empty()) return ValueError(absl::StrCat(e.name, ": the expression has no operation"));
  const int nodes = static_cast<int>(e.nodes.size());
  std::vector<int> outputs = e.outputs;
  if (outputs.empty()) outputs.push_back(nodes - 1);
  std::vector<bool> seen(nodes, false);
  for (size_t j = 0; j < outputs.size(); ++j) {
    const int o = outputs[j];
    if (o < 0 || o >= nodes) {
      return ValueError(absl::StrCat(e.name, ": output ", j, " is node ", o, " of ", nodes));
    }
    if (seen[o]) return ValueError(absl::StrCat(e.name, ": output ", j, " repeats node ", o));
    seen[o] = true;
  }
  PGK_ASSIGN_OR_RETURN(std::vector<NodeInfo> info, TypeNodes(e, inputs));
  // Each output has its node's shape and device, as unfused (an argument no result uses takes
  // no part); outputs of one shape and device share a kernel.
  std::vector<GPUArray> results(outputs.size());
  std::vector<bool> done(outputs.size(), false);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (done[j]) continue;
    const NodeInfo& first = info[outputs[j]];
    if (!first.device.has_value()) {
      return TypeError(absl::StrCat(e.name, ": output ", j, " has no array operand"));
    }
    std::vector<int> group;
    std::vector<size_t> members;
    for (size_t k = j; k < outputs.size(); ++k) {
      const NodeInfo& other = info[outputs[k]];
      if (!done[k] && other.shape == first.shape && other.device == first.device) {
        group.push_back(outputs[k]);
        members.push_back(k);
        done[k] = true;
      }
    }
    PGK_ASSIGN_OR_RETURN(std::vector<GPUArray> r, RunGroup(e, inputs, info, group));
    for (size_t m = 0; m < members.size(); ++m) results[members[m]] = std::move(r[m]);
  }
  return results;
}

}  // namespace pygpukit::ops
