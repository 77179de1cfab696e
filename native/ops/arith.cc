// Elementwise arithmetic (+ - * /) with broadcasting and type promotion (Array API tables, NEP 50
// weak Python scalars). Operands are cast to the result dtype, then one kernel computes the op.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

// Result dtype of `op` given the promoted operand dtype.
absl::StatusOr<DType> ResultDType(BinaryOp op, DType promoted, absl::string_view operands) {
  if (op == BinaryOp::kSubtract && promoted == DType::Bool) {
    return TypeError(absl::StrCat("subtract: boolean subtraction is not supported (", operands,
                                  "); use logical_xor"));
  }
  // True division of integers (and bools) produces the default floating dtype.
  if (op == BinaryOp::kDivide && !IsInexact(promoted)) return kDefaultFloat;
  return promoted;
}

std::string Describe(const GPUArray& a) {
  return absl::StrCat(DTypeName(a.dtype()), " array of shape ", ShapeToString(a.shape()));
}

absl::string_view ScalarKindName(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool:
      return "bool";
    case ScalarKind::Int:
      return "int";
    case ScalarKind::Float:
      return "float";
    case ScalarKind::Complex:
      return "complex";
  }
  return "?";
}

// Broadcast view of `a` cast to `dtype`.
absl::StatusOr<GPUArray> Prepare(const GPUArray& a, DType dtype, absl::Span<const int64_t> shape) {
  PGK_ASSIGN_OR_RETURN(GPUArray cast, AsType(a, dtype, /*copy=*/false));
  return BroadcastTo(cast, shape);
}

absl::StatusOr<GPUArray> WithScalar(BinaryOp op, const GPUArray& a, const Scalar& s,
                                    bool scalar_first) {
  std::string operands = scalar_first
                             ? absl::StrCat("Python ", ScalarKindName(s.kind), " and ", Describe(a))
                             : absl::StrCat(Describe(a), " and Python ", ScalarKindName(s.kind));
  PGK_ASSIGN_OR_RETURN(DType dtype,
                       ResultDType(op, PromoteWithScalar(a.dtype(), s.kind), operands));
  unsigned char encoded[16];
  PGK_RETURN_IF_ERROR(EncodeScalar(s, dtype, encoded, BinaryOpName(op)));
  PGK_ASSIGN_OR_RETURN(GPUArray x, AsType(a, dtype, /*copy=*/false));
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(a.shape(), dtype, a.device()));
  PGK_RETURN_IF_ERROR(scalar_first ? LaunchBinary(op, out, nullptr, &x, encoded)
                                   : LaunchBinary(op, out, &x, nullptr, encoded));
  return out;
}

}  // namespace

absl::StatusOr<GPUArray> Binary(BinaryOp op, const GPUArray& a, const GPUArray& b) {
  if (a.device() != b.device()) {
    return ValueError(absl::StrCat(BinaryOpName(op), ": operands are on different devices (",
                                   a.device().ToString(), " and ", b.device().ToString(), ")"));
  }
  PGK_ASSIGN_OR_RETURN(DType dtype, ResultDType(op, PromoteTypes(a.dtype(), b.dtype()),
                                                absl::StrCat(Describe(a), " and ", Describe(b))));
  PGK_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape(), b.shape(), BinaryOpName(op)));
  PGK_ASSIGN_OR_RETURN(GPUArray x, Prepare(a, dtype, shape));
  PGK_ASSIGN_OR_RETURN(GPUArray y, Prepare(b, dtype, shape));
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(shape, dtype, a.device()));
  PGK_RETURN_IF_ERROR(LaunchBinary(op, out, &x, &y, nullptr));
  return out;
}

absl::StatusOr<GPUArray> Binary(BinaryOp op, const GPUArray& a, const Scalar& s) {
  return WithScalar(op, a, s, /*scalar_first=*/false);
}

absl::StatusOr<GPUArray> Binary(BinaryOp op, const Scalar& s, const GPUArray& a) {
  return WithScalar(op, a, s, /*scalar_first=*/true);
}

absl::StatusOr<GPUArray> Negative(const GPUArray& a) {
  if (a.dtype() == DType::Bool) {
    return TypeError(absl::StrCat("negative: boolean negation is not supported (", Describe(a),
                                  "); use logical_not"));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(a.shape(), a.dtype(), a.device()));
  PGK_RETURN_IF_ERROR(LaunchUnary(UnaryOp::kNegative, out, a));
  return out;
}

absl::StatusOr<GPUArray> Positive(const GPUArray& a) {
  if (a.dtype() == DType::Bool) {
    return TypeError(absl::StrCat("positive: not supported for ", Describe(a)));
  }
  return Copy(a);
}

absl::StatusOr<GPUArray> Add(const GPUArray& a, const GPUArray& b) {
  return Binary(BinaryOp::kAdd, a, b);
}
absl::StatusOr<GPUArray> Subtract(const GPUArray& a, const GPUArray& b) {
  return Binary(BinaryOp::kSubtract, a, b);
}
absl::StatusOr<GPUArray> Multiply(const GPUArray& a, const GPUArray& b) {
  return Binary(BinaryOp::kMultiply, a, b);
}
absl::StatusOr<GPUArray> Divide(const GPUArray& a, const GPUArray& b) {
  return Binary(BinaryOp::kDivide, a, b);
}

}  // namespace pygpukit::ops
