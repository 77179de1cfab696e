// The elementwise functions of the Array API as one table: for each, its enum, Python name,
// functor in ops/kernels/math_ops.h (or scalar_ops.h), arity, the dtypes it accepts and its
// result dtype. The op layer, the CPU kernels and the JIT's source generator all expand this one
// list, so an op cannot be declared in one place and missing in another.
#pragma once

#include <cstdint>

namespace pygpukit::ops {

/// Which operand dtypes an elementwise function accepts, and how they become the compute dtype
/// (the promoted dtype unless said otherwise).
enum class EwDomain : uint8_t {
  kAll,          // every dtype, bool included
  kNumeric,      // integers, floats, complex (not bool)
  kReal,         // integers and real floats (not bool, not complex)
  kRealOrBool,   // bool, integers and real floats
  kInexact,      // floats and complex; bool and integers compute in the default float dtype
  kRealInexact,  // real floats; bool and integers compute in the default float dtype
  kIntOrBool,    // bool and integers
  kInt,          // integers
  kLogical,      // every dtype, converted to bool (x != 0)
};

/// The result dtype of an elementwise function, given its compute dtype.
enum class EwResult : uint8_t {
  kSame,  // the compute dtype
  kBool,  // bool
  kReal,  // the real dtype of a complex compute dtype, else the compute dtype
};

// X(Enum, python_name, Functor, arity, EwDomain, EwResult)
#define PGK_FOR_EACH_ELEMENTWISE_OP(X)                                    \
  X(Abs, abs, AbsOp, 1, kAll, kReal)                                      \
  X(Acos, acos, AcosOp, 1, kInexact, kSame)                               \
  X(Acosh, acosh, AcoshOp, 1, kInexact, kSame)                            \
  X(Asin, asin, AsinOp, 1, kInexact, kSame)                               \
  X(Asinh, asinh, AsinhOp, 1, kInexact, kSame)                            \
  X(Atan, atan, AtanOp, 1, kInexact, kSame)                               \
  X(Atanh, atanh, AtanhOp, 1, kInexact, kSame)                            \
  X(BitwiseInvert, bitwise_invert, BitwiseInvertOp, 1, kIntOrBool, kSame) \
  X(Ceil, ceil, CeilOp, 1, kReal, kSame)                                  \
  X(Conj, conj, ConjOp, 1, kAll, kSame)                                   \
  X(Cos, cos, CosOp, 1, kInexact, kSame)                                  \
  X(Cosh, cosh, CoshOp, 1, kInexact, kSame)                               \
  X(Exp, exp, ExpOp, 1, kInexact, kSame)                                  \
  X(Expm1, expm1, Expm1Op, 1, kInexact, kSame)                            \
  X(Floor, floor, FloorOp, 1, kReal, kSame)                               \
  X(Gelu, gelu, GeluOp, 1, kRealInexact, kSame)                           \
  X(GeluTanh, gelu_tanh, GeluTanhOp, 1, kRealInexact, kSame)              \
  X(Imag, imag, ImagOp, 1, kAll, kReal)                                   \
  X(IsFinite, isfinite, IsFiniteOp, 1, kAll, kBool)                       \
  X(IsInf, isinf, IsInfOp, 1, kAll, kBool)                                \
  X(IsNan, isnan, IsNanOp, 1, kAll, kBool)                                \
  X(Log, log, LogOp, 1, kInexact, kSame)                                  \
  X(Log1p, log1p, Log1pOp, 1, kInexact, kSame)                            \
  X(Log2, log2, Log2Op, 1, kInexact, kSame)                               \
  X(Log10, log10, Log10Op, 1, kInexact, kSame)                            \
  X(LogicalNot, logical_not, LogicalNotOp, 1, kLogical, kBool)            \
  X(Negative, negative, NegOp, 1, kNumeric, kSame)                        \
  X(Real, real, RealOp, 1, kAll, kReal)                                   \
  X(Reciprocal, reciprocal, ReciprocalOp, 1, kInexact, kSame)             \
  X(Round, round, RoundOp, 1, kNumeric, kSame)                            \
  X(Sign, sign, SignOp, 1, kNumeric, kSame)                               \
  X(Signbit, signbit, SignbitOp, 1, kRealInexact, kBool)                  \
  X(Silu, silu, SiluOp, 1, kRealInexact, kSame)                           \
  X(Sin, sin, SinOp, 1, kInexact, kSame)                                  \
  X(Sinh, sinh, SinhOp, 1, kInexact, kSame)                               \
  X(Sqrt, sqrt, SqrtOp, 1, kInexact, kSame)                               \
  X(Square, square, SquareOp, 1, kNumeric, kSame)                         \
  X(Tan, tan, TanOp, 1, kInexact, kSame)                                  \
  X(Tanh, tanh, TanhOp, 1, kInexact, kSame)                               \
  X(Trunc, trunc, TruncOp, 1, kReal, kSame)                               \
  X(Add, add, AddOp, 2, kAll, kSame)                                      \
  X(Atan2, atan2, Atan2Op, 2, kRealInexact, kSame)                        \
  X(BitwiseAnd, bitwise_and, BitwiseAndOp, 2, kIntOrBool, kSame)          \
  X(BitwiseLeftShift, bitwise_left_shift, LeftShiftOp, 2, kInt, kSame)    \
  X(BitwiseOr, bitwise_or, BitwiseOrOp, 2, kIntOrBool, kSame)             \
  X(BitwiseRightShift, bitwise_right_shift, RightShiftOp, 2, kInt, kSame) \
  X(BitwiseXor, bitwise_xor, BitwiseXorOp, 2, kIntOrBool, kSame)          \
  X(Copysign, copysign, CopysignOp, 2, kRealInexact, kSame)               \
  X(Divide, divide, DivOp, 2, kInexact, kSame)                            \
  X(Equal, equal, EqualOp, 2, kAll, kBool)                                \
  X(FloorDivide, floor_divide, FloorDivideOp, 2, kReal, kSame)            \
  X(GeluMul, gelu_mul, GeluOp, 2, kRealInexact, kSame)                    \
  X(GeluTanhMul, gelu_tanh_mul, GeluTanhOp, 2, kRealInexact, kSame)       \
  X(Greater, greater, GreaterOp, 2, kRealOrBool, kBool)                   \
  X(GreaterEqual, greater_equal, GreaterEqualOp, 2, kRealOrBool, kBool)   \
  X(Hypot, hypot, HypotOp, 2, kRealInexact, kSame)                        \
  X(Less, less, LessOp, 2, kRealOrBool, kBool)                            \
  X(LessEqual, less_equal, LessEqualOp, 2, kRealOrBool, kBool)            \
  X(Logaddexp, logaddexp, LogaddexpOp, 2, kRealInexact, kSame)            \
  X(LogicalAnd, logical_and, LogicalAndOp, 2, kLogical, kBool)            \
  X(LogicalOr, logical_or, LogicalOrOp, 2, kLogical, kBool)               \
  X(LogicalXor, logical_xor, LogicalXorOp, 2, kLogical, kBool)            \
  X(Maximum, maximum, MaximumOp, 2, kRealOrBool, kSame)                   \
  X(Minimum, minimum, MinimumOp, 2, kRealOrBool, kSame)                   \
  X(Multiply, multiply, MulOp, 2, kAll, kSame)                            \
  X(Nextafter, nextafter, NextafterOp, 2, kRealInexact, kSame)            \
  X(NotEqual, not_equal, NotEqualOp, 2, kAll, kBool)                      \
  X(Pow, pow, PowOp, 2, kNumeric, kSame)                                  \
  X(Remainder, remainder, RemainderOp, 2, kReal, kSame)                   \
  X(SiluMul, silu_mul, SiluOp, 2, kRealInexact, kSame)                    \
  X(Subtract, subtract, SubOp, 2, kNumeric, kSame)                        \
  X(Clip, clip, ClipOp, 3, kRealOrBool, kSame)                            \
  X(Where, where, WhereOp, 3, kAll, kSame)

/// Every elementwise function (ops::Elementwise).
enum class ElementwiseOp : uint8_t {
#define PGK_EW_ENUM(E, name, F, arity, domain, result) k##E,
  PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_ENUM)
#undef PGK_EW_ENUM
};

}  // namespace pygpukit::ops
