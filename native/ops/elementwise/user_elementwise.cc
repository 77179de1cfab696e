// User elementwise kernels (gp.ElementwiseKernel): parameter lists, type placeholders bound from
// the arguments, broadcasting, the output, and the launch (ops/launch/).
#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || absl::ascii_isdigit(s[0])) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

absl::StatusOr<std::vector<UserParam>> ParseParams(absl::string_view text,
                                                   absl::string_view kernel) {
  std::vector<UserParam> params;
  if (absl::StripAsciiWhitespace(text).empty()) return params;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(absl::StripAsciiWhitespace(item), ' ', absl::SkipEmpty());
    if (words.size() != 2 || !IsIdentifier(words[1])) {
      return ValueError(absl::StrCat(kernel, ": a parameter is \"<dtype or type placeholder> ",
                                     "<name>\", got \"", absl::StripAsciiWhitespace(item), "\""));
    }
    UserParam p;
    p.name = std::string(words[1]);
    if (absl::StatusOr<DType> dt = ParseDType(words[0]); dt.ok()) {
      p.dtype = *dt;
    } else if (IsIdentifier(words[0])) {
      p.type_var = std::string(words[0]);
    } else {
      return ValueError(absl::StrCat(kernel, ": unknown type \"", words[0], "\""));
    }
    params.push_back(std::move(p));
  }
  return params;
}

}  // namespace

absl::StatusOr<UserKernel> DefineUserKernel(absl::string_view in_params,
                                            absl::string_view out_params, absl::string_view body,
                                            absl::string_view name) {
  UserKernel k;
  k.name = std::string(name.empty() ? "user_kernel" : name);
  if (!IsIdentifier(k.name)) {
    return ValueError(
        absl::StrCat("ElementwiseKernel: the name must be a C identifier, got \"", name, "\""));
  }
  PGK_ASSIGN_OR_RETURN(k.inputs, ParseParams(in_params, k.name));
  PGK_ASSIGN_OR_RETURN(k.outputs, ParseParams(out_params, k.name));
  if (k.outputs.empty()) {
    return ValueError(absl::StrCat(k.name, ": at least one output parameter is needed"));
  }
  std::map<std::string, int> seen;
  for (const UserParam& p : k.inputs) seen[p.name]++;
  for (const UserParam& p : k.outputs) seen[p.name]++;
  for (const auto& [n, count] : seen) {
    if (count > 1) return ValueError(absl::StrCat(k.name, ": parameter \"", n, "\" repeats"));
    if (absl::StartsWith(n, "pgk_")) {
      return ValueError(
          absl::StrCat(k.name, ": names starting with pgk_ are reserved (\"", n, "\")"));
    }
  }
  k.body = std::string(body);
  return k;
}

absl::StatusOr<std::vector<GPUArray>> RunUserKernel(const UserKernel& k,
                                                    absl::Span<const EwOperand> inputs,
                                                    absl::Span<const GPUArray> outs) {
  if (inputs.size() != k.inputs.size()) {
    return TypeError(
        absl::StrCat(k.name, ": takes ", k.inputs.size(), " inputs, got ", inputs.size()));
  }
  if (!outs.empty() && outs.size() != k.outputs.size()) {
    return TypeError(absl::StrCat(k.name, ": has ", k.outputs.size(), " outputs, got ", outs.size(),
                                  " output arrays"));
  }
  // Placeholders bind to the first array passed for them (inputs, then outputs), then to the
  // scalars' default dtypes.
  std::map<std::string, DType> bound;
  auto bind = [&](const UserParam& p, DType dt, absl::string_view what) -> absl::Status {
    const DType want = p.dtype.has_value() ? *p.dtype : bound.emplace(p.type_var, dt).first->second;
    if (want != dt) {
      return TypeError(absl::StrCat(
          k.name, ": ", what, " \"", p.name, "\" is ", DTypeName(dt), ", the kernel wants ",
          DTypeName(want), p.dtype.has_value() ? "" : absl::StrCat(" (", p.type_var, ")")));
    }
    return absl::OkStatus();
  };
  Shape shape;
  std::optional<Device> device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GPUArray* a = inputs[i].array;
    if (a == nullptr) continue;
    PGK_RETURN_IF_ERROR(bind(k.inputs[i], a->dtype(), "input"));
    if (!device.has_value()) {
      shape.assign(a->shape().begin(), a->shape().end());
      device = a->device();
    } else {
      if (a->device() != *device) {
        return ValueError(absl::StrCat(k.name, ": inputs on ", device->ToString(), " and ",
                                       a->device().ToString()));
      }
      PGK_ASSIGN_OR_RETURN(shape, BroadcastShapes(shape, a->shape(), k.name));
    }
  }
  const bool array_inputs = device.has_value();
  for (size_t j = 0; j < outs.size(); ++j) {
    const GPUArray& o = outs[j];
    PGK_RETURN_IF_ERROR(bind(k.outputs[j], o.dtype(), "output"));
    if (!device.has_value()) {
      shape.assign(o.shape().begin(), o.shape().end());
      device = o.device();
    } else if (o.device() != *device) {
      return ValueError(absl::StrCat(
          k.name, ": output \"", k.outputs[j].name, "\" is on ", o.device().ToString(), ", ",
          array_inputs ? "the inputs" : "another output", " on ", device->ToString()));
    }
    PGK_RETURN_IF_ERROR(
        CheckWritable(o, k.name, absl::StrCat("output \"", k.outputs[j].name, "\"")));
    if (absl::Span<const int64_t>(o.shape()) != absl::Span<const int64_t>(shape)) {
      return ValueError(absl::StrCat(
          k.name, ": output \"", k.outputs[j].name, "\" has shape ", ShapeToString(o.shape()), ", ",
          array_inputs ? "the inputs broadcast to " : "another output ", ShapeToString(shape)));
    }
  }
  if (!device.has_value()) {
    return TypeError(absl::StrCat(k.name, ": needs an array input or output arrays (out=)"));
  }
  UserEwLaunch l;
  l.spec.name = k.name;
  absl::InlinedVector<GPUArray, 4> views;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const UserParam& p = k.inputs[i];
    std::array<unsigned char, 16> bytes = {};
    DType dt;
    GPUArray view;
    if (inputs[i].array != nullptr) {
      dt = inputs[i].array->dtype();
      PGK_ASSIGN_OR_RETURN(view, BroadcastTo(*inputs[i].array, shape));
    } else {
      auto it = p.dtype.has_value() ? bound.end() : bound.find(p.type_var);
      dt = p.dtype.has_value() ? *p.dtype
           : it != bound.end()
               ? it->second
               : bound.emplace(p.type_var, DefaultDTypeOf(inputs[i].scalar.kind)).first->second;
      PGK_RETURN_IF_ERROR(EncodeScalar(inputs[i].scalar, dt, bytes.data(), k.name));
    }
    l.spec.inputs.push_back(EwInput{dt, !view.valid()});
    l.spec.names.push_back(p.name);
    l.spec.needs_complex = l.spec.needs_complex || IsComplex(dt);
    l.scalar_dtypes.push_back(dt);
    l.scalars.push_back(bytes);
    views.push_back(std::move(view));
  }
  l.spec.outputs.clear();
  for (const UserParam& p : k.outputs) {
    DType dt;
    if (p.dtype.has_value()) {
      dt = *p.dtype;
    } else if (auto it = bound.find(p.type_var); it != bound.end()) {
      dt = it->second;
    } else {
      return TypeError(absl::StrCat(k.name, ": the type ", p.type_var, " of output \"", p.name,
                                    "\" is not bound by an input; pass the outputs"));
    }
    l.spec.outputs.push_back(dt);
    l.spec.names.push_back(p.name);
    l.spec.needs_complex = l.spec.needs_complex || IsComplex(dt);
  }
  // The placeholders as types the body can name (T(1), T x = ...).
  std::string typedefs;
  for (const auto& [var, dt] : bound)
    absl::StrAppend(&typedefs, "typedef ", EwTypeName(dt), " ", var, "; ");
  l.spec.body = typedefs + k.body;
  // Bodies may use the complex types without a complex parameter.
  l.spec.needs_complex = l.spec.needs_complex || absl::StrContains(k.body, "omplex");
  // Outputs passed in keep their values for the body (y += x); new ones start undefined.
  l.spec.read_outputs = !outs.empty();
  // `i`, the element's index, unless a parameter has that name.
  l.spec.pass_index = std::none_of(l.spec.names.begin(), l.spec.names.end(),
                                   [](const std::string& n) { return n == "i"; });
  std::vector<GPUArray> results(outs.begin(), outs.end());
  if (results.empty()) {
    for (DType dt : l.spec.outputs) {
      PGK_ASSIGN_OR_RETURN(GPUArray r, NewArray(shape, dt, *device, k.name));
      results.push_back(std::move(r));
    }
  }
  PGK_RETURN_IF_ERROR(LaunchUserElementwise(l, views, results));
  return results;
}

}  // namespace pygpukit::ops
