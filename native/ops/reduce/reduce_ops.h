// Semantics of the reductions and scans, defined once for both backends: the CPU loops (g++)
// instantiate these reducers and the CUDA kernels are generated at run time from
// ops/reduce/reduce_jit.h (NVRTC receives both headers as source).
//
// A reducer over compute type C folds elements into an accumulator:
//   Acc           the running state (trivially copyable: kernels move it through shared memory
//                 and a global workspace);
//   Init()        the state of no elements;
//   Update(a, x, i)  folds element x, whose flat index within the reduced axes is i (a state
//                 receives its elements in increasing i: argmax keeps the first of ties);
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
  // Dense inner mode (CUDA): slice y takes the block trips y, y + slices, ... of the whole range
  // instead of one contiguous run, so the blocks of a wave read neighbouring memory.
  int64_t interleave;
  int64_t out_shape[kKernelMaxDims], out_stride[kKernelMaxDims];
  int64_t red_shape[kKernelMaxDims], red_stride[kKernelMaxDims];
  int64_t out_ndim, red_ndim;  // the dims in use (the JIT kernels also fix them at compile time)
  double correction;           // var / std: the divisor is n - correction
};
static_assert(sizeof(ReduceParams) == 344, "ReduceParams layout changed");

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
  } else if constexpr (IsNarrowFloatT<T>::value) {
    return static_cast<float>(x) != 0.0f;
  } else {
    return x != T(0);
  }
}
// Integer keys of the IEEE values of T (float or double) whose signed order is the values'
// order, -0 below +0: the magnitude bits of negative values flip (a map that is its own
// inverse). NaNs flip to keys beyond the infinities' (above for a positive sign, below for a
// negative one), so max / min folds keep the range of keys seen and find NaNs at the end: two
// integer max / min per element and no branches. (MaximumOp's chain of NaN and signed-zero
// tests compiled to branches per element and made the fold, not memory, the limit of bfloat16
// max on an H100.)
template <typename T>
struct FloatKey {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  using K = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;
  static constexpr U kMagnitude = ~U(0) >> 1;
  static constexpr U kInfBits = sizeof(T) == 8 ? U(0x7ff0000000000000ull) : U(0x7f800000u);
  static constexpr K kPosInf = static_cast<K>(kInfBits);  // the keys of +inf and -inf
  static constexpr K kNegInf = -kPosInf - 1;
  PGK_HD static U Bits(T x) {
    if constexpr (sizeof(T) == 8) {
      return ::pygpukit::detail::DoubleBits(x);
    } else {
      return ::pygpukit::detail::FloatBits(x);
    }
  }
  PGK_HD static U Flip(U u) { return u ^ ((U(0) - (u >> (sizeof(U) * 8 - 1))) & kMagnitude); }
  PGK_HD static K Of(T x) { return static_cast<K>(Flip(Bits(x))); }
  PGK_HD static bool IsNan(K k) { return k > kPosInf || k < kNegInf; }
  /// The value of a key; NaN keys give the quiet NaN.
  PGK_HD static T Value(K k) {
    if (IsNan(k)) return QuietNan<T>();
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
/// equal zeros max gives +0 and min -0. Integers compare as themselves; floating values fold
/// the range of their keys (detail::FloatKey), whose ends also tell whether a NaN was met.
template <typename C, bool kMax>
struct ExtremumReducer {
  using Compute = C;
  static constexpr bool kFloat = !std::is_integral_v<C>;
  using Key = detail::FloatKey<decltype(detail::Wide(C{}))>;
  using K = typename Key::K;
  struct Range {
    K hi, lo;
  };
  using Acc = std::conditional_t<kFloat, Range, C>;
  PGK_HD static Acc Init() {
    if constexpr (kFloat) {
      return Range{Key::kNegInf, Key::kPosInf};
    } else {
      return kMax ? detail::Lowest<C>() : detail::Highest<C>();
    }
  }
  PGK_HD static void Update(Acc& a, C x, int64_t) {
    if constexpr (kFloat) {
      const K k = Key::Of(detail::Wide(x));
      a.hi = a.hi > k ? a.hi : k;
      a.lo = a.lo < k ? a.lo : k;
    } else {
      a = Combine(a, x);
    }
  }
  PGK_HD static Acc Combine(Acc a, Acc b) {
    if constexpr (kFloat) {
      return Range{a.hi > b.hi ? a.hi : b.hi, a.lo < b.lo ? a.lo : b.lo};
    } else if constexpr (kMax) {
      return a > b ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
  template <typename Out>
  PGK_HD static Out Finalize(Acc a, int64_t, double) {
    if constexpr (kFloat) {
      // A NaN key lies beyond an infinity's, so the range holds it at one end.
      const K k = Key::IsNan(a.hi) ? a.hi : Key::IsNan(a.lo) ? a.lo : kMax ? a.hi : a.lo;
      return Cast<Out>(Key::Value(k));
    } else {
      return Cast<Out>(a);
    }
  }
};

/// argmax / argmin: the flat index (within the reduced axes) of the first extreme element; a
/// NaN counts as the extreme (the first NaN wins) and signed zeros are equal, as in NumPy. Real
/// C only. Floating values compare by key (detail::FloatKey) with every NaN moved to the winning
/// end, so an update is one integer compare and selects.
template <typename C, bool kMax>
struct ArgReducer {
  using Compute = C;
  static constexpr bool kFloat = !std::is_integral_v<C>;
  using Key = detail::FloatKey<decltype(detail::Wide(C{}))>;
  using V = std::conditional_t<kFloat, typename Key::K, C>;  // what is compared
  struct Acc {
    V value;
    int64_t index;  // -1: no element yet
  };
  // Float keys: a NaN's is one past the winning infinity's; no element's key is as far as
  // the start state's at the losing end, so every element beats it.
  static constexpr V kNanKey = kFloat ? (kMax ? Key::kPosInf + 1 : Key::kNegInf - 1) : V(0);
  PGK_HD static Acc Init() {
    return Acc{kFloat ? (kMax ? Key::kNegInf - 1 : Key::kPosInf + 1) : V(0), -1};
  }
  // Whether value x beats y (strictly).
  PGK_HD static bool Beats(V x, V y) { return kMax ? x > y : x < y; }
  PGK_HD static void Update(Acc& a, C x, int64_t i) {
    // Updates come in increasing i, so a tie keeps the earlier element.
    if constexpr (kFloat) {
      // Signed zeros are equal here: -0's key (-1, the first below +0's) joins +0's, and the
      // negative keys move up one.
      V k = Key::Of(detail::Wide(x));
      k += V(k < 0);
      const V v = k > Key::kPosInf || k <= Key::kNegInf ? kNanKey : k;
      if (Beats(v, a.value)) a = Acc{v, i};
    } else {
      if (a.index < 0 || Beats(x, a.value)) a = Acc{x, i};
    }
  }
  PGK_HD static Acc Combine(Acc a, Acc b) {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    const bool b_wins = Beats(b.value, a.value) || (b.value == a.value && b.index < a.index);
    return b_wins ? b : a;
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

// The reducers by the names of ops/reduce/reduce_table.h.
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
