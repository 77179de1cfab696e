// The single list of dtypes. Host dispatch (dtype.h), CPU kernels and the nvcc-built CUDA
// kernels all expand this list, so adding a dtype here is the one place to start.
//
// X(Enum, ScalarType, code) where ScalarType is the portable type from scalar_types.h and code is
// the short suffix used in CUDA kernel symbol names.
#pragma once

#define PGK_FOR_EACH_DTYPE(X)                      \
  X(Bool, bool, b1)                                \
  X(Int8, int8_t, i1)                              \
  X(Int16, int16_t, i2)                            \
  X(Int32, int32_t, i4)                            \
  X(Int64, int64_t, i8)                            \
  X(UInt8, uint8_t, u1)                            \
  X(UInt16, uint16_t, u2)                          \
  X(UInt32, uint32_t, u4)                          \
  X(UInt64, uint64_t, u8)                          \
  X(Float16, ::pygpukit::float16, f2)              \
  X(BFloat16, ::pygpukit::bfloat16, bf2)           \
  X(Float32, float, f4)                            \
  X(Float64, double, f8)                           \
  X(Complex64, ::pygpukit::complex64, c8)          \
  X(Complex128, ::pygpukit::complex128, c16)       \
  X(Float8E4M3Fn, ::pygpukit::float8_e4m3fn, e4m3) \
  X(Float8E5M2, ::pygpukit::float8_e5m2, e5m2)

// The element words kernels that move values without looking at them (fill, gather, scatter)
// are instantiated for: X(size in bytes, word type). VisitWord (ops/launch/word.h) dispatches on
// the same list.
#define PGK_FOR_EACH_WORD(X) \
  X(1, uint8_t)              \
  X(2, uint16_t)             \
  X(4, uint32_t)             \
  X(8, uint64_t)             \
  X(16, ::pygpukit::complex128)
