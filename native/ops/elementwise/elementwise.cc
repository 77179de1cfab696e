// The Array API elementwise functions (the table in ops/elementwise/elementwise_table.h): operand
// checks, broadcasting, type promotion (Array API tables, NEP 50 weak Python scalars), the result
// dtype, `out=` and the launch.
#include <limits>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

struct EwInfo {
  const char* name;
  int arity;
  EwDomain domain;
  EwResult result;
};

const EwInfo& InfoOf(ElementwiseOp op) {
  static constexpr EwInfo kInfo[] = {
#define PGK_EW_INFO(E, name, F, arity, domain, result) \
  {#name, arity, EwDomain::domain, EwResult::result},
      PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_INFO)
#undef PGK_EW_INFO
  };
  return kInfo[static_cast<int>(op)];
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

std::string DescribeOperands(absl::Span<const EwOperand> operands) {
  std::string s;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i > 0) absl::StrAppend(&s, i + 1 == operands.size() ? " and " : ", ");
    if (operands[i].array != nullptr) {
      absl::StrAppend(&s, Describe(*operands[i].array));
    } else {
      absl::StrAppend(&s, "Python ", ScalarKindName(operands[i].scalar.kind));
    }
  }
  return s;
}

// Promoted dtype of operands given as array dtypes (or nullopt for a Python scalar of the kind
// at the same position): arrays first (Array API tables), then weak scalars (NEP 50).
DType PromoteTypesOf(absl::Span<const std::optional<DType>> dtypes,
                     absl::Span<const ScalarKind> kinds) {
  std::optional<DType> dt;
  for (const std::optional<DType>& a : dtypes) {
    if (a.has_value()) dt = dt ? PromoteTypes(*dt, *a) : *a;
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i].has_value()) continue;
    dt = dt ? PromoteWithScalar(*dt, kinds[i]) : DefaultDTypeOf(kinds[i]);
  }
  return dt.value_or(kDefaultFloat);
}

DType Promote(absl::Span<const EwOperand> operands) {
  // Arrays of one dtype (the common case) promote to it.
  if (!operands.empty() && operands[0].array != nullptr) {
    const DType first = operands[0].array->dtype();
    bool same = true;
    for (const EwOperand& o : operands)
      same = same && o.array != nullptr && o.array->dtype() == first;
    if (same) return first;
  }
  absl::InlinedVector<std::optional<DType>, 3> dtypes;
  absl::InlinedVector<ScalarKind, 3> kinds;
  for (const EwOperand& o : operands) {
    dtypes.push_back(o.array != nullptr ? std::optional<DType>(o.array->dtype()) : std::nullopt);
    kinds.push_back(o.scalar.kind);
  }
  return PromoteTypesOf(dtypes, kinds);
}

// Compute dtype of `op` for the promoted dtype `p`, or TypeError (describing the operands).
absl::StatusOr<DType> ComputeDType(ElementwiseOp op, DType p,
                                   absl::FunctionRef<std::string()> describe) {
  const EwInfo& info = InfoOf(op);
  const bool is_bool = p == DType::Bool, is_int = IsInteger(p), is_complex = IsComplex(p);
  auto reject = [&](absl::string_view accepted) -> absl::Status {
    std::string hint;
    if (op == ElementwiseOp::kSubtract && is_bool) hint = "; use logical_xor";
    if (op == ElementwiseOp::kNegative && is_bool) hint = "; use logical_not";
    return TypeError(absl::StrCat(info.name, ": ", DTypeName(p), " operands are not supported (",
                                  describe(), "); it accepts ", accepted, hint));
  };
  switch (info.domain) {
    case EwDomain::kAll:
      return p;
    case EwDomain::kNumeric:
      if (is_bool) return reject("numeric dtypes");
      return p;
    case EwDomain::kReal:
      if (is_bool || is_complex) return reject("integer and real floating dtypes");
      return p;
    case EwDomain::kRealOrBool:
      if (is_complex) return reject("bool, integer and real floating dtypes");
      return p;
    case EwDomain::kInexact:
      return is_bool || is_int ? kDefaultFloat : p;
    case EwDomain::kRealInexact:
      if (is_complex) return reject("real dtypes");
      return is_bool || is_int ? kDefaultFloat : p;
    case EwDomain::kIntOrBool:
      if (!is_bool && !is_int) return reject("bool and integer dtypes");
      return p;
    case EwDomain::kInt:
      if (!is_int) return reject("integer dtypes");
      return p;
    case EwDomain::kLogical:
      return DType::Bool;
  }
  return p;
}

DType ResultDType(ElementwiseOp op, DType compute) {
  switch (InfoOf(op).result) {
    case EwResult::kSame:
      return compute;
    case EwResult::kBool:
      return DType::Bool;
    case EwResult::kReal:
      return RealOf(compute);
  }
  return compute;
}

// Kind rank for NumPy's "same_kind" casting: a value may be stored in a dtype of its own kind or
// a higher one (bool < unsigned < signed < float < complex).
int KindRank(DType dt) {
  switch (KindOf(dt)) {
    case DTypeKind::Bool:
      return 0;
    case DTypeKind::Unsigned:
      return 1;
    case DTypeKind::Signed:
      return 2;
    case DTypeKind::Float:
      return 3;
    case DTypeKind::Complex:
      return 4;
  }
  return 0;
}

absl::Status CheckOut(absl::string_view name, const GPUArray& out, absl::Span<const int64_t> shape,
                      DType result, Device device) {
  if (out.device() != device) {
    return ValueError(absl::StrCat(name, ": out is on ", out.device().ToString(),
                                   ", the operands on ", device.ToString()));
  }
  if (absl::Span<const int64_t>(out.shape()) != shape) {
    return ValueError(absl::StrCat(name, ": out has shape ", ShapeToString(out.shape()),
                                   ", the result has shape ", ShapeToString(shape)));
  }
  PGK_RETURN_IF_ERROR(CheckWritable(out, name, "out"));
  if (KindRank(out.dtype()) < KindRank(result)) {
    return TypeError(absl::StrCat(name, ": cannot store the ", DTypeName(result),
                                  " result in an out array of dtype ", DTypeName(out.dtype())));
  }
  return absl::OkStatus();
}

// Elementwise with the compute dtype chosen by the caller when `forced` is set (clip).
absl::StatusOr<GPUArray> Run(ElementwiseOp op, absl::Span<const EwOperand> operands,
                             const GPUArray* out, std::optional<DType> forced) {
  const EwInfo& info = InfoOf(op);
  if (static_cast<int>(operands.size()) != info.arity) {
    return ValueError(
        absl::StrCat(info.name, ": expected ", info.arity, " operands, got ", operands.size()));
  }
  // Devices and the broadcast shape (built only when the shapes differ: a view of the first
  // array's shape otherwise).
  std::optional<Device> device;
  absl::Span<const int64_t> shape;
  Shape broadcast;
  bool any_array = false;
  for (const EwOperand& o : operands) {
    if (o.array == nullptr) continue;
    if (device.has_value() && o.array->device() != *device) {
      return ValueError(absl::StrCat(info.name, ": operands are on different devices (",
                                     device->ToString(), " and ", o.array->device().ToString(),
                                     ")"));
    }
    device = o.array->device();
    if (!any_array) {
      shape = o.array->shape();
    } else if (absl::Span<const int64_t>(o.array->shape()) != shape) {
      PGK_ASSIGN_OR_RETURN(broadcast, BroadcastShapes(shape, o.array->shape(), info.name));
      shape = broadcast;
    }
    any_array = true;
  }
  if (!any_array) {
    if (out == nullptr) {
      return ValueError(absl::StrCat(info.name, ": at least one operand must be an array"));
    }
    device = out->device();
  }
  // `where`'s condition is a boolean operand of its own; the other operands promote together.
  const bool has_condition = op == ElementwiseOp::kWhere;
  absl::Span<const EwOperand> values = operands.subspan(has_condition ? 1 : 0);
  DType compute;
  if (forced.has_value()) {
    compute = *forced;
  } else {
    PGK_ASSIGN_OR_RETURN(
        compute, ComputeDType(op, Promote(values), [&] { return DescribeOperands(values); }));
  }
  const DType result = ResultDType(op, compute);
  if (out != nullptr) PGK_RETURN_IF_ERROR(CheckOut(info.name, *out, shape, result, *device));

  EwLaunch launch;
  launch.op = op;
  launch.name = info.name;
  launch.compute = compute;
  launch.result = result;
  for (size_t i = 0; i < operands.size(); ++i) {
    EwLaunch::Input in;
    in.compute = has_condition && i == 0 ? DType::Bool : compute;
    in.array = operands[i].array;
    if (in.array == nullptr) {
      PGK_RETURN_IF_ERROR(EncodeScalar(operands[i].scalar, in.compute, in.scalar, info.name));
    }
    launch.inputs.push_back(in);
  }
  if (out != nullptr) {
    PGK_RETURN_IF_ERROR(LaunchElementwise(launch, *out));
    return *out;
  }
  PGK_ASSIGN_OR_RETURN(GPUArray dst, NewArray(shape, result, *device, info.name));
  PGK_RETURN_IF_ERROR(LaunchElementwise(launch, dst));
  return dst;
}

// A Python scalar bound of clip as x's dtype: integers beyond an integer dtype's range clamp to
// it (a bound below the minimum cannot change any element).
absl::StatusOr<EwOperand> ClipBound(const EwOperand& bound, DType dt) {
  if (bound.array != nullptr) return bound;
  const Scalar& s = bound.scalar;
  if (!IsInexact(dt) && (s.kind == ScalarKind::Float || s.kind == ScalarKind::Complex)) {
    return TypeError(absl::StrCat("clip: a Python ", ScalarKindName(s.kind), " bound for a ",
                                  DTypeName(dt), " array (bounds take the array's dtype)"));
  }
  if (IsComplex(dt)) return TypeError("clip: complex arrays have no order");
  if (!IsInteger(dt) || s.kind != ScalarKind::Int) return bound;
  return VisitDType(dt, [&](auto tag) -> absl::StatusOr<EwOperand> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // Beyond the range: a bound past the dtype's own extreme on its side affects no element,
      // one past the other extreme clamps every element to it; either way, that extreme.
      // Compared exactly (a double would misjudge uint64 bounds near 2^64).
      const Scalar lowest = Scalar::Int(static_cast<int64_t>(std::numeric_limits<T>::min()));
      const Scalar highest = Scalar::UInt(static_cast<uint64_t>(std::numeric_limits<T>::max()));
      if (s.beyond_64_bits) return EwOperand(s.f < 0 ? lowest : highest);
      if (s.above_int64) {
        if (!std::is_same_v<T, uint64_t>) return EwOperand(highest);
      } else if (s.i < static_cast<int64_t>(std::numeric_limits<T>::min())) {
        return EwOperand(lowest);
      } else if (s.i >= 0 && static_cast<uint64_t>(s.i) >
                                 static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        return EwOperand(highest);
      }
    }
    return bound;
  });
}

// The bound clip uses when none is given: the dtype's extreme (infinities for floats).
Scalar NoBound(DType dt, bool lower) {
  if (dt == DType::Bool) return Scalar::Bool(!lower);
  if (IsInexact(dt)) {
    return Scalar::Float(lower ? -std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::infinity());
  }
  return VisitDType(dt, [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return lower ? Scalar::Int(static_cast<int64_t>(std::numeric_limits<T>::min()))
                   : Scalar::UInt(static_cast<uint64_t>(std::numeric_limits<T>::max()));
    }
    return Scalar::Int(0);
  });
}

}  // namespace

absl::string_view ElementwiseOpName(ElementwiseOp op) { return InfoOf(op).name; }

absl::StatusOr<GPUArray> Elementwise(ElementwiseOp op, absl::Span<const EwOperand> operands,
                                     const GPUArray* out) {
  if (op == ElementwiseOp::kClip) {
    if (operands.size() != 3 || operands[0].array == nullptr) {
      return ValueError("clip: expected an array and two bounds");
    }
    return Clip(*operands[0].array, operands[1], operands[2], out);
  }
  return Run(op, operands, out, std::nullopt);
}

absl::StatusOr<GPUArray> Clip(const GPUArray& x, std::optional<EwOperand> min,
                              std::optional<EwOperand> max, const GPUArray* out) {
  const DType dt = x.dtype();
  if (IsComplex(dt)) {
    return TypeError(absl::StrCat("clip: complex arrays have no order (", Describe(x), ")"));
  }
  PGK_ASSIGN_OR_RETURN(EwOperand lo,
                       min.has_value() ? ClipBound(*min, dt) : EwOperand(NoBound(dt, true)));
  PGK_ASSIGN_OR_RETURN(EwOperand hi,
                       max.has_value() ? ClipBound(*max, dt) : EwOperand(NoBound(dt, false)));
  for (const EwOperand* b : {&lo, &hi}) {
    if (b->array == nullptr) continue;
    if (IsComplex(b->array->dtype())) {
      return TypeError(
          absl::StrCat("clip: complex bounds have no order (", Describe(*b->array), ")"));
    }
    // The result keeps x's dtype, so a bound must convert to it exactly.
    if (PromoteTypes(dt, b->array->dtype()) != dt) {
      return TypeError(absl::StrCat("clip: a ", DTypeName(b->array->dtype()), " bound for a ",
                                    DTypeName(dt),
                                    " array (bounds must promote to the array's dtype, which the "
                                    "result keeps)"));
    }
  }
  const EwOperand operands[] = {EwOperand(x), lo, hi};
  return Run(ElementwiseOp::kClip, operands, out, dt);
}

absl::StatusOr<GPUArray> Where(const EwOperand& condition, const EwOperand& x, const EwOperand& y,
                               const GPUArray* out) {
  const EwOperand operands[] = {condition, x, y};
  return Run(ElementwiseOp::kWhere, operands, out, std::nullopt);
}

absl::StatusOr<GPUArray> Binary(ElementwiseOp op, const EwOperand& a, const EwOperand& b,
                                const GPUArray* out) {
  const EwOperand operands[] = {a, b};
  return Elementwise(op, operands, out);
}

absl::StatusOr<GPUArray> Unary(ElementwiseOp op, const GPUArray& a, const GPUArray* out) {
  const EwOperand operands[] = {EwOperand(a)};
  return Elementwise(op, operands, out);
}

absl::StatusOr<GPUArray> Negative(const GPUArray& a) { return Unary(ElementwiseOp::kNegative, a); }

absl::StatusOr<GPUArray> Positive(const GPUArray& a) {
  if (a.dtype() == DType::Bool) {
    return TypeError(absl::StrCat("positive: not supported for ", Describe(a)));
  }
  return Copy(a);
}

absl::StatusOr<GPUArray> Add(const GPUArray& a, const GPUArray& b) {
  return Binary(ElementwiseOp::kAdd, a, b);
}
absl::StatusOr<GPUArray> Subtract(const GPUArray& a, const GPUArray& b) {
  return Binary(ElementwiseOp::kSubtract, a, b);
}
absl::StatusOr<GPUArray> Multiply(const GPUArray& a, const GPUArray& b) {
  return Binary(ElementwiseOp::kMultiply, a, b);
}
absl::StatusOr<GPUArray> Divide(const GPUArray& a, const GPUArray& b) {
  return Binary(ElementwiseOp::kDivide, a, b);
}

absl::StatusOr<EwTyping> TypeElementwise(ElementwiseOp op,
                                         absl::Span<const std::optional<DType>> dtypes,
                                         absl::Span<const ScalarKind> kinds) {
  const EwInfo& info = InfoOf(op);
  if (static_cast<int>(dtypes.size()) != info.arity || kinds.size() != dtypes.size()) {
    return ValueError(
        absl::StrCat(info.name, ": expected ", info.arity, " operands, got ", dtypes.size()));
  }
  const size_t skip = op == ElementwiseOp::kWhere ? 1 : 0;  // where's condition is bool
  auto describe = [&] {
    std::string s;
    for (size_t i = skip; i < dtypes.size(); ++i) {
      absl::StrAppend(&s, i > skip ? ", " : "",
                      dtypes[i].has_value() ? DTypeName(*dtypes[i]) : ScalarKindName(kinds[i]));
    }
    return s;
  };
  PGK_ASSIGN_OR_RETURN(
      DType compute,
      ComputeDType(op, PromoteTypesOf(dtypes.subspan(skip), kinds.subspan(skip)), describe));
  EwTyping t;
  t.compute.assign(dtypes.size(), compute);
  if (skip == 1) t.compute[0] = DType::Bool;
  t.result = ResultDType(op, compute);
  return t;
}

}  // namespace pygpukit::ops
