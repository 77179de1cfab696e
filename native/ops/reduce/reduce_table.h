// The single list of reductions: X(Enum, name, Reducer) with the Array API name and the reducer
// template of ops/reduce/reduce_ops.h (over the compute type). The op layer, the CPU loops, the
// CUDA source generator and the bindings expand it.
#pragma once

#define PGK_FOR_EACH_REDUCE_OP(X)  \
  X(Sum, sum, SumReducer)          \
  X(Prod, prod, ProdReducer)       \
  X(Mean, mean, MeanReducer)       \
  X(Max, max, MaxReducer)          \
  X(Min, min, MinReducer)          \
  X(ArgMax, argmax, ArgMaxReducer) \
  X(ArgMin, argmin, ArgMinReducer) \
  X(All, all, AllReducer)          \
  X(Any, any, AnyReducer)          \
  X(Var, var, VarReducer)          \
  X(Std, std, StdReducer)

namespace pygpukit::ops {

/// A reduction of the table.
enum class ReduceOp {
#define PGK_REDUCE_ENUM(E, name, R) k##E,
  PGK_FOR_EACH_REDUCE_OP(PGK_REDUCE_ENUM)
#undef PGK_REDUCE_ENUM
};

}  // namespace pygpukit::ops
