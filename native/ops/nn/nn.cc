// The nn family's op layer: validation, layout (rows made contiguous along the reduced dims),
// outputs, then one row-op launch (nn_kernels.h).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cfloat>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/nn/nn_kernels.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

bool RowDType(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

absl::Status CheckRowDType(DType d, absl::string_view op) {
  if (RowDType(d)) return absl::OkStatus();
  return TypeError(absl::StrCat(op, ": unsupported dtype ", DTypeName(d),
                                " (supported: float16, bfloat16, float32, float64)"));
}

// Launches `op` over `x` viewed as rows x cols (contiguous) into `y` (and residual_out).
absl::Status RunRows(absl::string_view name, kernels::RowOp op, const GPUArray& x,
                     const GPUArray& y, int64_t cols, const GPUArray* residual,
                     const GPUArray* residual_out, const GPUArray* weight, const GPUArray* bias,
                     double eps) {
  if (x.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                       LaunchContext::Open(name, {&x, &y, residual, residual_out, weight, bias}));
  kernels::RowsParams p{};
  p.cols = cols;
  p.rows = x.size() / cols;
  p.x = x.data();
  p.y = y.data();
  p.residual = residual != nullptr ? residual->data() : nullptr;
  p.residual_out = residual_out != nullptr ? residual_out->data() : nullptr;
  p.weight = weight != nullptr ? weight->data() : nullptr;
  p.bias = bias != nullptr ? bias->data() : nullptr;
  p.eps = eps;
  p.op = op;
  return kRowsKernel(ctx, x.dtype(), p);
}

// The number of rows' columns for a norm over the trailing `normalized_shape` of x, after
// checking it is x's trailing dims.
absl::StatusOr<int64_t> NormCols(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                 absl::string_view op) {
  const int nd = static_cast<int>(normalized_shape.size());
  bool ok = nd >= 1 && nd <= x.ndim();
  for (int i = 0; ok && i < nd; ++i) {
    ok = x.shape()[x.ndim() - nd + i] == normalized_shape[i];
  }
  if (!ok) {
    return ValueError(absl::StrCat(op, ": normalized_shape ", ShapeToString(normalized_shape),
                                   " is not the trailing dims of the input of shape ",
                                   ShapeToString(x.shape())));
  }
  int64_t cols = 1;
  for (int64_t d : normalized_shape) cols *= d;
  return cols;
}

// A weight / bias / residual operand: the right device, dtype and shape, made contiguous.
absl::StatusOr<GPUArray> NormOperand(const GPUArray& a, const GPUArray& x,
                                     absl::Span<const int64_t> shape, absl::string_view what,
                                     absl::string_view op) {
  if (a.device() != x.device()) {
    return ValueError(absl::StrCat(op, ": ", what, " is on ", a.device().ToString(),
                                   ", the input on ", x.device().ToString()));
  }
  if (a.dtype() != x.dtype()) {
    return TypeError(absl::StrCat(op, ": ", what, " has dtype ", DTypeName(a.dtype()),
                                  ", the input ", DTypeName(x.dtype()), " (they must match)"));
  }
  if (!std::equal(a.shape().begin(), a.shape().end(), shape.begin(), shape.end())) {
    return ValueError(absl::StrCat(op, ": ", what, " has shape ", ShapeToString(a.shape()),
                                   ", expected ", ShapeToString(shape)));
  }
  return Contiguous(a);
}

absl::StatusOr<NormResult> Norm(absl::string_view op, kernels::RowOp row_op, const GPUArray& x_in,
                                absl::Span<const int64_t> normalized_shape,
                                const GPUArray* weight_in, const GPUArray* bias_in, double eps,
                                const GPUArray* residual_in) {
  PGK_RETURN_IF_ERROR(CheckRowDType(x_in.dtype(), op));
  PGK_ASSIGN_OR_RETURN(int64_t cols, NormCols(x_in, normalized_shape, op));
  PGK_ASSIGN_OR_RETURN(GPUArray x, Contiguous(x_in));
  std::optional<GPUArray> weight, bias, residual;
  if (weight_in != nullptr) {
    PGK_ASSIGN_OR_RETURN(weight, NormOperand(*weight_in, x, normalized_shape, "weight", op));
  }
  if (bias_in != nullptr) {
    PGK_ASSIGN_OR_RETURN(bias, NormOperand(*bias_in, x, normalized_shape, "bias", op));
  }
  if (residual_in != nullptr) {
    PGK_ASSIGN_OR_RETURN(residual, NormOperand(*residual_in, x, x.shape(), "residual", op));
  }
  NormResult out;
  PGK_ASSIGN_OR_RETURN(out.y, Empty(x.shape(), x.dtype(), x.device()));
  if (residual) {
    PGK_ASSIGN_OR_RETURN(out.residual, Empty(x.shape(), x.dtype(), x.device()));
  }
  PGK_RETURN_IF_ERROR(RunRows(op, row_op, x, out.y, cols, residual ? &*residual : nullptr,
                              out.residual ? &*out.residual : nullptr, weight ? &*weight : nullptr,
                              bias ? &*bias : nullptr, eps));
  return out;
}

// The positions of apply_rotary as a contiguous int64 array over `rows_shape`, each checked to
// lie in [0, n) (a min / max reduction and one read back, as integer indexing does).
absl::StatusOr<GPUArray> RopePositions(const GPUArray* positions,
                                       absl::Span<const int64_t> rows_shape, int64_t n,
                                       int64_t start, Device device) {
  constexpr absl::string_view op = "apply_rotary";
  GPUArray pos;
  if (positions == nullptr) {
    if (rows_shape.empty()) {
      return ValueError("apply_rotary: without positions x needs a sequence axis (ndim >= 2)");
    }
    const int64_t s = rows_shape.back();
    if (start < 0 || start > n - s) {
      return IndexError(absl::StrCat(op, ": positions ", start, " .. ", start + s - 1,
                                     " are out of range for tables of ", n, " positions"));
    }
    PGK_ASSIGN_OR_RETURN(pos, ArangeInt(start, start + s, 1, DType::Int64, device));
  } else {
    if (positions->device() != device) {
      return ValueError(absl::StrCat(op, ": positions are on ", positions->device().ToString(),
                                     ", x on ", device.ToString()));
    }
    if (!IsInteger(positions->dtype())) {
      return TypeError(
          absl::StrCat(op, ": positions must be integers, got ", DTypeName(positions->dtype())));
    }
    pos = *positions;
  }
  absl::StatusOr<GPUArray> wide = BroadcastTo(pos, rows_shape);
  if (!wide.ok()) {
    return ValueError(absl::StrCat(op, ": positions of shape ", ShapeToString(pos.shape()),
                                   " do not broadcast to x's rows ", ShapeToString(rows_shape)));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, AsType(*wide, DType::Int64, /*copy=*/true));
  if (positions != nullptr && out.size() > 0) {
    PGK_ASSIGN_OR_RETURN(GPUArray lo, Reduce(ReduceOp::kMin, out));
    PGK_ASSIGN_OR_RETURN(GPUArray hi, Reduce(ReduceOp::kMax, out));
    const GPUArray both[] = {lo, hi};
    PGK_ASSIGN_OR_RETURN(GPUArray pair, Stack(both, 0));
    int64_t host[2];
    PGK_RETURN_IF_ERROR(ToHost(pair, host));
    if (host[0] < 0 || host[1] >= n) {
      return IndexError(absl::StrCat(op, ": position ", host[0] < 0 ? host[0] : host[1],
                                     " is out of range for tables of ", n, " positions"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<GPUArray> ApplyRotary(const GPUArray& x_in, const GPUArray& cos_in,
                                     const GPUArray& sin_in, const GPUArray* positions,
                                     bool interleaved, const GPUArray* out_in, int64_t start) {
  constexpr absl::string_view op = "apply_rotary";
  PGK_RETURN_IF_ERROR(CheckRowDType(x_in.dtype(), op));
  if (x_in.ndim() < 1) return ValueError("apply_rotary: x must have at least 1 dimension");
  for (const GPUArray* t : {&cos_in, &sin_in}) {
    if (t->device() != x_in.device()) {
      return ValueError(absl::StrCat(op, ": the tables are on ", t->device().ToString(), ", x on ",
                                     x_in.device().ToString()));
    }
    PGK_RETURN_IF_ERROR(CheckRowDType(t->dtype(), op));
  }
  const int64_t dim = x_in.shape().back();
  if (cos_in.ndim() != 2 || cos_in.shape() != sin_in.shape() || 2 * cos_in.shape()[1] > dim) {
    return ValueError(absl::StrCat(op,
                                   ": cos and sin must be (positions, R / 2) tables of one "
                                   "shape with R <= the head dim ",
                                   dim, "; got ", ShapeToString(cos_in.shape()), " and ",
                                   ShapeToString(sin_in.shape())));
  }
  const int64_t n = cos_in.shape()[0], half = cos_in.shape()[1];
  const Shape rows_shape(x_in.shape().begin(), x_in.shape().end() - 1);
  PGK_ASSIGN_OR_RETURN(GPUArray pos, RopePositions(positions, rows_shape, n, start, x_in.device()));
  const DType acc = x_in.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  PGK_ASSIGN_OR_RETURN(GPUArray x, Contiguous(x_in));
  PGK_ASSIGN_OR_RETURN(GPUArray cos, AsType(cos_in, acc, false));
  PGK_ASSIGN_OR_RETURN(cos, Contiguous(cos));
  PGK_ASSIGN_OR_RETURN(GPUArray sin, AsType(sin_in, acc, false));
  PGK_ASSIGN_OR_RETURN(sin, Contiguous(sin));
  GPUArray out;
  if (out_in != nullptr) {
    if (out_in->device() != x_in.device() || out_in->dtype() != x_in.dtype() ||
        out_in->shape() != x_in.shape() || !out_in->is_contiguous()) {
      return ValueError(absl::StrCat(op, ": out must be a contiguous array of x's shape ",
                                     ShapeToString(x_in.shape()), " and dtype ",
                                     DTypeName(x_in.dtype()), " on its device"));
    }
    out = *out_in;
  } else {
    PGK_ASSIGN_OR_RETURN(out, Empty(x.shape(), x.dtype(), x.device()));
  }
  if (x.size() == 0) return out;
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open(op, {&x, &out, &cos, &sin, &pos}));
  kernels::RopeParams p{};
  p.rows = x.size() / dim;
  p.dim = dim;
  p.rot = 2 * half;
  p.x = x.data();
  p.out = out.data();
  p.cos = cos.data();
  p.sin = sin.data();
  p.pos = static_cast<const int64_t*>(pos.data());
  p.interleaved = interleaved ? 1 : 0;
  PGK_RETURN_IF_ERROR(kRopeKernel(ctx, x.dtype(), p));
  return out;
}

absl::StatusOr<GPUArray> Softmax(const GPUArray& x_in, int64_t axis, bool log,
                                 std::optional<DType> dtype) {
  const absl::string_view op = log ? "log_softmax" : "softmax";
  GPUArray x = x_in;
  if (dtype) {
    PGK_RETURN_IF_ERROR(CheckRowDType(*dtype, op));
    PGK_ASSIGN_OR_RETURN(x, AsType(x_in, *dtype, false));
  }
  PGK_RETURN_IF_ERROR(CheckRowDType(x.dtype(), op));
  if (x.ndim() == 0) {  // one row of one element
    PGK_RETURN_IF_ERROR(NormalizeAxis(axis, 1, op).status());
    const int64_t one[] = {1};
    PGK_ASSIGN_OR_RETURN(GPUArray row, Reshape(x, one));
    PGK_ASSIGN_OR_RETURN(GPUArray y, Softmax(row, 0, log));
    return Reshape(y, {});
  }
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, x.ndim(), op));
  const int last = x.ndim() - 1;
  const kernels::RowOp row_op = log ? kernels::kRowLogSoftmax : kernels::kRowSoftmax;
  if (ax == last) {
    PGK_ASSIGN_OR_RETURN(GPUArray rows, Contiguous(x));
    PGK_ASSIGN_OR_RETURN(GPUArray y, Empty(x.shape(), x.dtype(), x.device()));
    PGK_RETURN_IF_ERROR(
        RunRows(op, row_op, rows, y, x.shape()[last], nullptr, nullptr, nullptr, nullptr, 0.0));
    return y;
  }
  // Another axis: rows along it through a transposed copy, then back.
  const int64_t from[] = {ax}, to[] = {last};
  PGK_ASSIGN_OR_RETURN(GPUArray moved, MoveAxis(x, from, to));
  PGK_ASSIGN_OR_RETURN(GPUArray rows, Contiguous(moved));
  PGK_ASSIGN_OR_RETURN(GPUArray y, Empty(rows.shape(), x.dtype(), x.device()));
  PGK_RETURN_IF_ERROR(
      RunRows(op, row_op, rows, y, rows.shape()[last], nullptr, nullptr, nullptr, nullptr, 0.0));
  PGK_ASSIGN_OR_RETURN(GPUArray back, MoveAxis(y, to, from));
  return Contiguous(back);
}

absl::StatusOr<GPUArray> SoftmaxMasked(const GPUArray& x_in) {
  constexpr absl::string_view op = "softmax";
  PGK_RETURN_IF_ERROR(CheckRowDType(x_in.dtype(), op));
  if (x_in.ndim() == 0) return ValueError("softmax: a masked softmax needs at least one axis");
  PGK_ASSIGN_OR_RETURN(GPUArray x, Contiguous(x_in));
  PGK_ASSIGN_OR_RETURN(GPUArray y, Empty(x.shape(), x.dtype(), x.device()));
  if (x.shape().back() == 0) return y;
  PGK_RETURN_IF_ERROR(RunRows(op, kernels::kRowSafeSoftmax, x, y, x.shape().back(), nullptr,
                              nullptr, nullptr, nullptr, 0.0));
  return y;
}

absl::StatusOr<NormResult> LayerNorm(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                     const GPUArray* weight, const GPUArray* bias, double eps,
                                     const GPUArray* residual) {
  return Norm("layer_norm", kernels::kRowLayerNorm, x, normalized_shape, weight, bias, eps,
              residual);
}

absl::StatusOr<NormResult> RmsNorm(const GPUArray& x, absl::Span<const int64_t> normalized_shape,
                                   const GPUArray* weight, std::optional<double> eps,
                                   const GPUArray* residual) {
  double e = 0.0;
  if (eps) {
    e = *eps;
  } else {
    // torch: the float32 epsilon for 16-bit and float32 inputs (their compute type), float64's
    // for float64.
    e = x.dtype() == DType::Float64 ? DBL_EPSILON : FLT_EPSILON;
  }
  return Norm("rms_norm", kernels::kRowRmsNorm, x, normalized_shape, weight, nullptr, e, residual);
}

}  // namespace pygpukit::ops
