// Reductions and scans (the table in ops/reduce/reduce_table.h): argument checks, axes, the result
// and compute dtypes, empty cases and the output; the backends run ops/reduce/reduce_ops.h.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/reduce/reduce_kernels.h"

namespace pygpukit::ops {
namespace {

using DimFlags = absl::InlinedVector<bool, 8>;

std::string Describe(const GPUArray& a) {
  return absl::StrCat(DTypeName(a.dtype()), " array of shape ", ShapeToString(a.shape()));
}

// sum / prod / cumulative_*: bool and signed integers widen to int64, unsigned to uint64.
DType SumDType(DType dt) {
  switch (KindOf(dt)) {
    case DTypeKind::Bool:
    case DTypeKind::Signed:
      return DType::Int64;
    case DTypeKind::Unsigned:
      return DType::UInt64;
    default:
      return dt;
  }
}

// The dtype elements are folded in and the result dtype.
struct Typing {
  DType compute, result;
};

absl::StatusOr<Typing> TypingOf(ReduceOp op, absl::string_view name, const GPUArray& a,
                                std::optional<DType> dtype) {
  const DType dt = a.dtype();
  if (dtype.has_value() && op != ReduceOp::kSum && op != ReduceOp::kProd) {
    return TypeError(absl::StrCat(name, ": takes no dtype argument"));
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd: {
      const DType t = dtype.value_or(SumDType(dt));
      return Typing{t, t};
    }
    case ReduceOp::kMean:
    case ReduceOp::kVar:
    case ReduceOp::kStd: {
      // Bool and integers give the default float dtype (as sin(int) does), converted to float64
      // per element: the states are float64 anyway, and float32 would round large integers.
      if (!IsInexact(dt)) return Typing{DType::Float64, kDefaultFloat};
      return Typing{dt, op == ReduceOp::kMean ? dt : RealOf(dt)};
    }
    case ReduceOp::kMax:
    case ReduceOp::kMin:
    case ReduceOp::kArgMax:
    case ReduceOp::kArgMin:
      if (IsComplex(dt)) {
        return TypeError(
            absl::StrCat(name, ": complex values have no order (got ", Describe(a), ")"));
      }
      return Typing{dt, op == ReduceOp::kArgMax || op == ReduceOp::kArgMin ? DType::Int64 : dt};
    case ReduceOp::kAll:
    case ReduceOp::kAny:
      return Typing{dt, DType::Bool};
  }
  return RuntimeError("unknown reduction");
}

// Flags of the reduced dims (all when `axes` is absent); ValueError for a repeated axis.
absl::StatusOr<DimFlags> ReducedDims(absl::string_view name, const GPUArray& a,
                                     const std::optional<std::vector<int64_t>>& axes) {
  DimFlags reduced(a.ndim(), !axes.has_value());
  if (!axes.has_value()) return reduced;
  for (int64_t axis : *axes) {
    PGK_ASSIGN_OR_RETURN(int d, NormalizeAxis(axis, a.ndim(), name));
    if (reduced[d]) {
      return ValueError(absl::StrCat(name, ": axis ", axis, " is repeated in (",
                                     absl::StrJoin(*axes, ", "), ")"));
    }
    reduced[d] = true;
  }
  return reduced;
}

}  // namespace

absl::string_view ReduceOpName(ReduceOp op) {
  static constexpr const char* kNames[] = {
#define PGK_REDUCE_NAME(E, name, R) #name,
      PGK_FOR_EACH_REDUCE_OP(PGK_REDUCE_NAME)
#undef PGK_REDUCE_NAME
  };
  return kNames[static_cast<int>(op)];
}

absl::StatusOr<GPUArray> Reduce(ReduceOp op, const GPUArray& a, const ReduceOptions& options) {
  const absl::string_view name = ReduceOpName(op);
  if (!a.valid()) return ValueError(absl::StrCat(name, ": invalid array"));
  const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
  if (arg && options.axes.has_value() && options.axes->size() != 1) {
    return ValueError(
        absl::StrCat(name, ": takes one axis or none (got ", options.axes->size(), ")"));
  }
  PGK_ASSIGN_OR_RETURN(Typing typing, TypingOf(op, name, a, options.dtype));
  PGK_ASSIGN_OR_RETURN(DimFlags reduced, ReducedDims(name, a, options.axes));
  Shape kept, out_shape;
  int64_t n_red = 1;
  for (int d = 0; d < a.ndim(); ++d) {
    if (reduced[d]) {
      n_red *= a.shape()[d];
      if (options.keepdims) out_shape.push_back(1);
    } else {
      kept.push_back(a.shape()[d]);
      out_shape.push_back(a.shape()[d]);
    }
  }
  const bool needs_elements = op == ReduceOp::kMax || op == ReduceOp::kMin || arg;
  if (needs_elements && n_red == 0) {
    return ValueError(
        absl::StrCat(name, ": reduction over zero elements (", Describe(a), ") has no identity"));
  }
  if (!std::isfinite(options.correction)) {
    return ValueError(absl::StrCat(name, ": correction must be finite, got ", options.correction));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray(kept, typing.result, a.device(), name));
  if (out.size() > 0) {
    ReduceLaunch l{op, name, typing.compute, options.correction, {}};
    PGK_RETURN_IF_ERROR(LaunchReduce(l, a, reduced, out));
  }
  if (!options.keepdims) return out;
  return Reshape(out, out_shape);
}

absl::StatusOr<GPUArray> CumulativeReduce(ReduceOp op, const GPUArray& a,
                                          std::optional<int64_t> axis, std::optional<DType> dtype,
                                          bool include_initial) {
  if (op != ReduceOp::kSum && op != ReduceOp::kProd) {
    return ValueError("CumulativeReduce: sum or prod only");
  }
  const std::string name = absl::StrCat("cumulative_", ReduceOpName(op));
  if (!a.valid()) return ValueError(absl::StrCat(name, ": invalid array"));
  if (a.ndim() == 0) {
    return ValueError(
        absl::StrCat(name, ": needs an array of at least one dimension (got ", Describe(a), ")"));
  }
  if (!axis.has_value() && a.ndim() > 1) {
    return ValueError(absl::StrCat(name, ": axis is required for an array of ", a.ndim(),
                                   " dimensions (", Describe(a), ")"));
  }
  PGK_ASSIGN_OR_RETURN(int d, NormalizeAxis(axis.value_or(0), a.ndim(), name));
  PGK_ASSIGN_OR_RETURN(Typing typing, TypingOf(op, name, a, dtype));
  Shape shape(a.shape().begin(), a.shape().end());
  shape[d] += include_initial ? 1 : 0;
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray(shape, typing.result, a.device(), name));
  if (out.size() > 0) {
    ReduceLaunch l{op, name, typing.compute, 0.0, {}};
    PGK_RETURN_IF_ERROR(LaunchScan(l, a, d, include_initial, out));
  }
  return out;
}

}  // namespace pygpukit::ops
