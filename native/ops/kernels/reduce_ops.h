// Semantics of the reductions and scans, defined once for both backends: the CPU loops (g++)
// instantiate these reducers and the CUDA kernels are generated at run time from
// ops/kernels/reduce_jit.h (NVRTC receives both headers as source).
//
// A reducer over compute type C folds elements into an accumulator:
//   Acc           the running state (trivially copyable: kernels move it through shared memory
//                 and a global workspace);
//   Init()        the state of no elements;
//   Update(a, x, i)  folds element x, whose flat index within the reduced axes is i;
//   Combine(a, b) merges two states, in no particular order of their elements (kernels fold
//                 interleaved subsets and merge them by trees); every reducer here gives the
//                 same result for any order up to floating-point rounding (argmax / argmin
//                 compare indices), which each launch's fixed order makes deterministic;
//   Finalize<Out>(a, n, correction)  the result for n reduced elements.
//
// Accumulators are wide: integer sums and products wrap in 64 bits (their results are then
// exact modulo the result dtype, as NumPy's), real floating sums, products, means and variances
// accumulate in double (16-bit and float32 inputs lose nothing to a long running sum), complex
// ones in complex double. Variance uses Welford's update and Chan's merge: one pass, no
// catastrophic cancellation.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/kernels/math_ops.h"
#include "ops/kernels/params.h"

namespace pygpukit::kernels {

/// A reduction launch: `out[o] = reduce(in[base(o) + offset(r)] for r in [0, n_red))`, where
/// base(o) comes from o's coordinates over the kept dims and offset(r) from r's coordinates
/// over the reduced dims (both C order, element strides of the input). The output is dense.
struct ReduceParams {
  const void* in;
  void* out;
  void* partial;   // [n_out][slices] accumulators when the reduced range is split
  int64_t n_out;   // outputs (product of the kept extents)
  int64_t n_red;   // elements reduced into each output
  int64_t slice;   // reduced elements per slice (a multiple of the kernel's vector width)
  int64_t slices;  // slices per output (grid.y); 1 = the kernel writes `out` itself
  int64_t out_shape[kKernelMaxDims], out_stride[kKernelMaxDims];
  int64_t red_shape[kKernelMaxDims], red_stride[kKernelMaxDims];
  int64_t out_ndim, red_ndim;  // the dims in use (the JIT kernels also fix them at compile time)
  double correction;           // var / std: the divisor is n - correction
};
static_assert(sizeof(ReduceParams) == 336, "ReduceParams layout changed");

/// A scan launch: along each of `n_lines` lines of `length` elements (line l's first input
/// element at the offset of l's coordinates over the other dims), out = the running reduction,
/// with one leading identity element when `include_initial`.
struct ScanParams {
  const void* in;
  void* out;
  void* partial;  // [n_lines][chunks] accumulators (block mode with several chunks)
  int64_t n_lines, length;
  int64_t in_axis_stride, out_axis_stride;
  int64_t chunk, chunks;  // block mode: elements per chunk (a multiple of the tile), chunks
  int64_t line_shape[kKernelMaxDims], line_in_stride[kKernelMaxDims],
      line_out_stride[kKernelMaxDims];
  int64_t line_ndim;
  int64_t include_initial;
};
static_assert(sizeof(ScanParams) == 280, "ScanParams layout changed");

namespace detail {
template <typename T>
PGK_HD T Lowest() {
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(std::make_unsigned_t<T>(1) << (sizeof(T) * 8 - 1));
    } else {
      return T(0);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    return ::pygpukit::detail::BitsDouble(uint64_t{0xfff0000000000000});
  } else {
    return T(::pygpukit::detail::BitsFloat(0xff800000u));  // -inf
  }
}
template <typename T>
PGK_HD T Highest() {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(~Lowest<T>());
  } else if constexpr (std::is_same_v<T, double>) {
    return ::pygpukit::detail::BitsDouble(uint64_t{0x7ff0000000000000});
  } else {
    return T(::pygpukit::detail::BitsFloat(0x7f800000u));  // +inf
  }
}
template <typename T>
PGK_HD bool Truthy(T x) {
  if constexpr (IsComplexT<T>::value) {
    return x.re != 0 || x.im != 0;
  } else if constexpr (IsHalfT<T>::value) {
    return static_cast<float>(x) != 0.0f;
  } else {
    return x != T(0);
  }
}
// Integer keys of the IEEE values of F (float or double) whose signed order is the values'
// order, -0 below +0: the magnitude bits of negative values flip (a map that is its own
// inverse). Every NaN takes kNanHigh (max folds) or kNanLow (min folds), beyond every other key,
// so a max / min fold is one integer max / min per element: MaximumOp's chain of NaN and
// signed-zero tests compiled to branches per element and made the fold, not memory, the limit
// of bfloat16 max on an H100. Only NaN bit patterns flip to kNanHigh / kNanLow themselves.
template <typename T>
struct FloatKey {
  using F = T;
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  using K = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;
  static constexpr U kMagnitude = ~U(0) >> 1;
  static constexpr U kInfBits = sizeof(T) == 8 ? U(0x7ff0000000000000ull) : U(0x7f800000u);
  static constexpr K kNanHigh = static_cast<K>(kMagnitude);
  static constexpr K kNanLow = -kNanHigh - 1;
  PGK_HD static U Bits(T x) {
    if constexpr (sizeof(T) == 8) {
      return ::pygpukit::detail::DoubleBits(x);
    } else {
      return ::pygpukit::detail::FloatBits(x);
    }
  }
  PGK_HD static U Flip(U u) { return u ^ ((U(0) - (u >> (sizeof(U) * 8 - 1))) & kMagnitude); }
  template <bool kHigh = true>
  PGK_HD static K Of(T x) {
    const U u = Bits(x);
    if ((u & kMagnitude) > kInfBits) return kHigh ? kNanHigh : kNanLow;
    return static_cast<K>(Flip(u));
  }
  PGK_HD static T Value(K k) {
    if (k == kNanHigh || k == kNanLow) return QuietNan<T>();
    const U u = Flip(static_cast<U>(k));
    if constexpr (sizeof(T) == 8) {
      return ::pygpukit::detail::BitsDouble(u);
    } else {
      return ::pygpukit::detail::BitsFloat(u);
    }
  }
};
// The wide accumulator of sums and products of C.
template <typename C>
using WideOf = std::conditional_t<IsComplexT<C>::value, Complex<double>,
                                  std::conditional_t<std::is_integral_v<C>, uint64_t, double>>;
template <typename M>
PGK_HD M Scale(M a, double s) {
  if constexpr (IsComplexT<M>::value) {
    return M(a.re * s, a.im * s);
  } else {
    return a * s;
  }
}
template <typename M>
PGK_HD M DivBy(M a, double s) {
  if constexpr (IsComplexT<M>::value) {
    return M(a.re / s, a.im / s);
  } else {
    return a / s;
  }
}
// Re(conj(a) * b): the product of real deviations, |a|^2 for a == b.
template <typename M>
PGK_HD double Dot(M a, M b) {
  if constexpr (IsComplexT<M>::value) {
    return a.re * b.re + a.im * b.im;
  } else {
    return a * b;
  }
}
}  // namespace detail

/// sum: wraps for integers (in 64 bits), double / complex double for floating types. The float
/// state starts at -0.0, the identity of IEEE addition (a sum of -0.0 values stays -0.0, as
/// NumPy's); a sum of no elements is +0.0, as NumPy's.
template <typename C>
struct SumReducer {
  using Compute = C;
  using Acc = detail::WideOf<C>;
  PGK_HD static Acc Init() {
    if constexpr (std::is_integral_v<Acc>) {
      return Acc(0);
    } else if constexpr (IsComplexT<Acc>::value) {
      return Acc(-0.0, -0.0);
    } else {
      return -0.0;
    }
  }
  PGK_HD static void Update(Acc& a, C x, int64_t) { a = a + Cast<Acc>(x); }
  PGK_HD static Acc Combine(Acc a, Acc b) { return a + b; }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t n, double) {
    return Cast<Out>(n == 0 ? Acc(0) : a);
  }
};

/// prod: the same accumulators as sum.
template <typename C>
struct ProdReducer {
  using Compute = C;
  using Acc = detail::WideOf<C>;
  PGK_HD static Acc Init() { return Acc(1); }
  PGK_HD static void Update(Acc& a, C x, int64_t) { a = a * Cast<Acc>(x); }
  PGK_HD static Acc Combine(Acc a, Acc b) { return a * b; }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double) {
    return Cast<Out>(a);
  }
};

/// mean: the wide sum over n (NaN for n == 0). C is a floating or complex type.
template <typename C>
struct MeanReducer : SumReducer<C> {
  using Acc = typename SumReducer<C>::Acc;
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t n, double) {
    return Cast<Out>(detail::DivBy(a, static_cast<double>(n)));
  }
};

/// max / min: NaN propagates (the result is the quiet NaN of the result dtype), as NumPy's; of
/// equal zeros max gives +0 and min -0. Integers compare as themselves; floating values fold as
/// ordered integer keys (detail::FloatKey): one integer max / min per element, no branches.
template <typename C, bool kMax>
struct ExtremumReducer {
  using Compute = C;
  static constexpr bool kFloat = !std::is_integral_v<C>;
  using Key = detail::FloatKey<decltype(detail::Wide(C{}))>;
  using Acc = std::conditional_t<kFloat, typename Key::K, C>;
  PGK_HD static Acc Init() {
    if constexpr (kFloat) {
      return Key::Of(kMax ? detail::Lowest<typename Key::F>() : detail::Highest<typename Key::F>());
    } else {
      return kMax ? detail::Lowest<C>() : detail::Highest<C>();
    }
  }
  PGK_HD static void Update(Acc& a, C x, int64_t) {
    if constexpr (kFloat) {
      a = Combine(a, Key::template Of<kMax>(detail::Wide(x)));
    } else {
      a = Combine(a, x);
    }
  }
  PGK_HD static Acc Combine(Acc a, Acc b) {
    if constexpr (kMax) {
      return a > b ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double) {
    if constexpr (kFloat) {
      return Cast<Out>(Key::Value(a));
    } else {
      return Cast<Out>(a);
    }
  }
};

/// argmax / argmin: the flat index (within the reduced axes) of the first extreme element; a
/// NaN counts as the extreme (the first NaN wins), as in NumPy. Real C only.
template <typename C, bool kMax>
struct ArgReducer {
  using Compute = C;
  struct Acc {
    C value;
    int64_t index;  // -1: no element yet
  };
  PGK_HD static Acc Init() { return Acc{C(0), -1}; }
  // Whether (x, i) wins over (y, j), both present.
  PGK_HD static bool Wins(C x, int64_t i, C y, int64_t j) {
    const bool xn = detail::IsNan(x), yn = detail::IsNan(y);
    if (xn || yn) return xn && yn ? i < j : xn;
    const auto a = detail::Wide(x), b = detail::Wide(y);
    if (a != b) return kMax ? a > b : a < b;
    return i < j;
  }
  PGK_HD static void Update(Acc& a, C x, int64_t i) {
    if (a.index < 0 || Wins(x, i, a.value, a.index)) a = Acc{x, i};
  }
  PGK_HD static Acc Combine(Acc a, Acc b) {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    return Wins(b.value, b.index, a.value, a.index) ? b : a;
  }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double) {
    return static_cast<Out>(a.index);
  }
};

/// all / any: truth of the elements (nonzero; NaN is true; complex: either part nonzero).
template <typename C, bool kAll>
struct LogicalReducer {
  using Compute = C;
  using Acc = bool;
  PGK_HD static Acc Init() { return kAll; }
  PGK_HD static void Update(Acc& a, C x, int64_t) {
    a = kAll ? (a && detail::Truthy(x)) : (a || detail::Truthy(x));
  }
  PGK_HD static Acc Combine(Acc a, Acc b) { return kAll ? (a && b) : (a || b); }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double) {
    return a;
  }
};

/// var / std with a correction (n - correction divides the sum of squared deviations; a divisor
/// at or below zero gives inf or NaN, as NumPy's). Complex C: the variance of the values in the
/// complex plane (a real result). C is a floating or complex type.
template <typename C, bool kStd>
struct VarianceReducer {
  using Compute = C;
  using M = std::conditional_t<IsComplexT<C>::value, Complex<double>, double>;
  struct Acc {
    double n;
    M mean;
    double m2;  // sum of squared deviations from the mean
  };
  PGK_HD static Acc Init() { return Acc{0.0, M(0), 0.0}; }
  PGK_HD static void Update(Acc& a, C x, int64_t) {
    const M v = Cast<M>(x);
    a.n += 1.0;
    const M d = v - a.mean;
    a.mean = a.mean + detail::DivBy(d, a.n);
    a.m2 += detail::Dot(d, v - a.mean);
  }
  PGK_HD static Acc Combine(Acc a, Acc b) {
    if (b.n == 0.0) return a;
    if (a.n == 0.0) return b;
    const double n = a.n + b.n;
    const M d = b.mean - a.mean;
    return Acc{n, a.mean + detail::Scale(d, b.n / n),
               a.m2 + b.m2 + detail::Dot(d, d) * (a.n * b.n / n)};
  }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double correction) {
    double divisor = a.n - correction;
    if (divisor < 0.0) divisor = 0.0;
    const double v = a.m2 / divisor;
    return Cast<Out>(kStd ? std::sqrt(v) : v);
  }
};

// The reducers by the names of ops/reduce_table.h.
template <typename C>
using MaxReducer = ExtremumReducer<C, true>;
template <typename C>
using MinReducer = ExtremumReducer<C, false>;
template <typename C>
using ArgMaxReducer = ArgReducer<C, true>;
template <typename C>
using ArgMinReducer = ArgReducer<C, false>;
template <typename C>
using AllReducer = LogicalReducer<C, true>;
template <typename C>
using AnyReducer = LogicalReducer<C, false>;
template <typename C>
using VarReducer = VarianceReducer<C, false>;
template <typename C>
using StdReducer = VarianceReducer<C, true>;

}  // namespace pygpukit::kernels
