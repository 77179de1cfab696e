// pygpukit._core._nn: the nn family's ops (wrapped by pygpukit/nn/functional.py). Argument
// conversion and error mapping only.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "array_bindings.h"
#include "convert.h"
#include "ops/nn/nn.h"

namespace pygpukit::py {
namespace {

const GPUArray* Ptr(const std::optional<GPUArray>& a) { return a ? &*a : nullptr; }

// y, or (y, new residual) when a residual was given.
pyb::object NormResultOf(ops::NormResult r) {
  if (!r.residual) return pyb::cast(std::move(r.y));
  return pyb::make_tuple(std::move(r.y), std::move(*r.residual));
}

}  // namespace

void BindNn(pyb::module_& m) {
  pyb::module_ nn = m.def_submodule("_nn", "nn ops (see pygpukit.nn).");
  nn.def(
      "softmax",
      [](const pyb::handle& x, const pyb::handle& axis, bool log, const pyb::handle& dtype) {
        const absl::string_view op = log ? "log_softmax" : "softmax";
        std::optional<DType> dt;
        if (!dtype.is_none()) dt = ToDType(dtype, op);
        return Unwrap(ops::Softmax(AsArray(x, op), ToInt(axis, "axis", op), log, dt));
      },
      pyb::arg("x"), pyb::arg("axis"), pyb::arg("log"), pyb::arg("dtype"));
  nn.def(
      "layer_norm",
      [](const pyb::handle& x, const pyb::handle& shape, const pyb::handle& weight,
         const pyb::handle& bias, const pyb::handle& eps, const pyb::handle& residual) {
        constexpr absl::string_view op = "layer_norm";
        const Shape ns = ToShape(shape, op);
        const std::optional<GPUArray> w = OptionalArray(weight, op), b = OptionalArray(bias, op),
                                      r = OptionalArray(residual, op);
        return NormResultOf(Unwrap(
            ops::LayerNorm(AsArray(x, op), ns, Ptr(w), Ptr(b), RealArg(eps, "eps", op), Ptr(r))));
      },
      pyb::arg("x"), pyb::arg("normalized_shape"), pyb::arg("weight"), pyb::arg("bias"),
      pyb::arg("eps"), pyb::arg("residual"));
  nn.def(
      "rms_norm",
      [](const pyb::handle& x, const pyb::handle& shape, const pyb::handle& weight,
         const pyb::handle& eps, const pyb::handle& residual) {
        constexpr absl::string_view op = "rms_norm";
        const Shape ns = ToShape(shape, op);
        const std::optional<GPUArray> w = OptionalArray(weight, op),
                                      r = OptionalArray(residual, op);
        std::optional<double> e;
        if (!eps.is_none()) e = RealArg(eps, "eps", op);
        return NormResultOf(Unwrap(ops::RmsNorm(AsArray(x, op), ns, Ptr(w), e, Ptr(r))));
      },
      pyb::arg("x"), pyb::arg("normalized_shape"), pyb::arg("weight"), pyb::arg("eps"),
      pyb::arg("residual"));
  nn.def(
      "apply_rotary",
      [](const pyb::handle& x, const pyb::handle& cos, const pyb::handle& sin,
         const pyb::handle& positions, const pyb::handle& interleaved, const pyb::handle& out) {
        constexpr absl::string_view op = "apply_rotary";
        // An integer: the first position of the sequence axis (no device read to check it).
        const bool offset = !pyb::isinstance<GPUArray>(positions) && IsInt(positions);
        const std::optional<GPUArray> pos = offset ? std::nullopt : OptionalArray(positions, op);
        const std::optional<GPUArray> o = OptionalArray(out, op);
        const int64_t start = offset ? ToInt(positions, "positions", op) : 0;
        return Unwrap(ops::ApplyRotary(AsArray(x, op), AsArray(cos, op), AsArray(sin, op), Ptr(pos),
                                       BoolArg(interleaved, "interleaved", op), Ptr(o), start));
      },
      pyb::arg("x"), pyb::arg("cos"), pyb::arg("sin"), pyb::arg("positions"),
      pyb::arg("interleaved"), pyb::arg("out"));
  nn.def(
      "paged_kv_append",
      [](const pyb::handle& kc, const pyb::handle& vc, const pyb::handle& k, const pyb::handle& v,
         const pyb::handle& table, const pyb::handle& start) {
        constexpr absl::string_view op = "paged_kv_append";
        Check(ops::PagedKvAppend(AsArray(kc, op), AsArray(vc, op), AsArray(k, op), AsArray(v, op),
                                 AsArray(table, op), AsArray(start, op)));
      },
      pyb::arg("k_cache"), pyb::arg("v_cache"), pyb::arg("k"), pyb::arg("v"),
      pyb::arg("block_table"), pyb::arg("start"));
  nn.def(
      "paged_attention",
      [](const pyb::handle& q, const pyb::handle& kc, const pyb::handle& vc,
         const pyb::handle& table, const pyb::handle& lens, const pyb::handle& scale,
         const pyb::handle& is_causal, const pyb::handle& check_table) {
        constexpr absl::string_view op = "paged_attention";
        std::optional<double> sc;
        if (!scale.is_none()) sc = RealArg(scale, "scale", op);
        return Unwrap(ops::PagedAttention(
            AsArray(q, op), AsArray(kc, op), AsArray(vc, op), AsArray(table, op), AsArray(lens, op),
            sc, BoolArg(is_causal, "is_causal", op), BoolArg(check_table, "check_table", op)));
      },
      pyb::arg("q"), pyb::arg("k_cache"), pyb::arg("v_cache"), pyb::arg("block_table"),
      pyb::arg("seq_lens"), pyb::arg("scale"), pyb::arg("is_causal"), pyb::arg("check_table"));
  nn.def(
      "scaled_dot_product_attention",
      [](const pyb::handle& q, const pyb::handle& k, const pyb::handle& v, const pyb::handle& mask,
         const pyb::handle& is_causal, const pyb::handle& scale, const pyb::handle& enable_gqa) {
        constexpr absl::string_view op = "scaled_dot_product_attention";
        const std::optional<GPUArray> m = OptionalArray(mask, op);
        std::optional<double> sc;
        if (!scale.is_none()) sc = RealArg(scale, "scale", op);
        return Unwrap(ops::ScaledDotProductAttention(AsArray(q, op), AsArray(k, op), AsArray(v, op),
                                                     Ptr(m), BoolArg(is_causal, "is_causal", op),
                                                     sc, BoolArg(enable_gqa, "enable_gqa", op)));
      },
      pyb::arg("q"), pyb::arg("k"), pyb::arg("v"), pyb::arg("attn_mask"), pyb::arg("is_causal"),
      pyb::arg("scale"), pyb::arg("enable_gqa"));
}

}  // namespace pygpukit::py
