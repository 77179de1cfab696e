// Complex elementary functions for Complex<F> (the ComplexMath declared in math_ops.h): the host
// compiler's std::complex functions on the CPU and libcu++'s cuda::std::complex under NVRTC, both
// implementations of C99 Annex G's special values. expm1, log1p, log2, log10 and pow, which
// std::complex lacks or computes differently from NumPy, follow NumPy's formulations. Included
// only by kernels that use complex types: libcu++'s <complex> costs NVRTC about 0.7 s.
#pragma once

#include "ops/kernels/math_ops.h"

#if defined(__CUDACC_RTC__)
#include <cuda/std/complex>
#define PGK_STD_COMPLEX ::cuda::std
#else
#include <complex>
#define PGK_STD_COMPLEX ::std
#endif

namespace pygpukit::kernels {

template <typename F>
struct ComplexMath<Complex<F>> {
  using C = Complex<F>;
  using S = PGK_STD_COMPLEX::complex<F>;
  PGK_HD static S To(C z) { return S(z.re, z.im); }
  PGK_HD static C From(S s) { return C(s.real(), s.imag()); }

#define PGK_COMPLEX_FN(FN) \
  PGK_HD static C FN(C z) { return From(PGK_STD_COMPLEX::FN(To(z))); }
  PGK_COMPLEX_FN(acos)
  PGK_COMPLEX_FN(acosh)
  PGK_COMPLEX_FN(asin)
  PGK_COMPLEX_FN(asinh)
  PGK_COMPLEX_FN(atan)
  PGK_COMPLEX_FN(atanh)
  PGK_COMPLEX_FN(cos)
  PGK_COMPLEX_FN(cosh)
  PGK_COMPLEX_FN(exp)
  PGK_COMPLEX_FN(log)
  PGK_COMPLEX_FN(sin)
  PGK_COMPLEX_FN(sinh)
  PGK_COMPLEX_FN(sqrt)
  PGK_COMPLEX_FN(tan)
  PGK_COMPLEX_FN(tanh)
#undef PGK_COMPLEX_FN

  // log(z) / log(2) and / log(10), as NumPy.
  PGK_HD static C log2(C z) {
    C l = log(z);
    const F k = F(1.442695040888963407359924681001892137);
    return C(l.re * k, l.im * k);
  }
  PGK_HD static C log10(C z) {
    C l = log(z);
    const F k = F(0.434294481903251827651128931782540819);
    return C(l.re * k, l.im * k);
  }
  // exp(z) - 1 without cancellation near 0: (expm1(x) cos y - 2 sin^2(y/2), exp(x) sin y).
  PGK_HD static C expm1(C z) {
    const F s = std::sin(z.im / F(2));
    return C(std::expm1(z.re) * std::cos(z.im) - F(2) * s * s, std::exp(z.re) * std::sin(z.im));
  }
  // log(1 + z) as log|1 + z| + i arg(1 + z).
  PGK_HD static C log1p(C z) {
    const F l = std::hypot(z.re + F(1), z.im);
    return C(std::log(l), std::atan2(z.im, z.re + F(1)));
  }
  // NumPy's complex power: 1 for a zero exponent; 0 ** b is 0 when b's real part is positive
  // (whatever its imaginary part, as NumPy 2 and Python give), else NaN;
  // small integral exponents by repeated multiplication; otherwise exp(b log a).
  PGK_HD static C pow(C a, C b) {
    if (b.re == F(0) && b.im == F(0)) return C(F(1), F(0));
    if (a.re == F(0) && a.im == F(0)) {
      if (b.re > F(0)) return C(F(0), F(0));
      const F nan = detail::QuietNan<F>();
      return C(nan, nan);
    }
    if (b.im == F(0) && b.re == std::trunc(b.re) && std::fabs(b.re) < F(100)) {
      auto n = static_cast<int>(std::fabs(b.re));
      if (b.re == F(1)) return a;
      if (b.re == F(2)) return a * a;
      if (b.re == F(3)) return (a * a) * a;
      C result(F(1), F(0)), p = a;
      for (;;) {
        if (n & 1) result = result * p;
        n >>= 1;
        if (n == 0) break;
        p = p * p;
      }
      return b.re < F(0) ? C(F(1), F(0)) / result : result;
    }
    return From(PGK_STD_COMPLEX::pow(To(a), To(b)));
  }
};

}  // namespace pygpukit::kernels

#undef PGK_STD_COMPLEX
