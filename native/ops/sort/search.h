// The sort order (NumPy's: NaN after every number, complex values by real then imaginary part
// with NaNs last), the per-element binary search of searchsorted and the merge-sort pass, shared by
// the CPU loop (g++) and the CUDA kernels (nvcc).
#pragma once

#include <cstdint>

#include "core/scalar_types.h"
#include "ops/kernels/params.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// out[i] = the insertion point of value i in the sorted 1-D `sorted` (m elements, its order
/// given by `sorter` when not null): the first position whose element is not less than the
/// value (`right`: greater than it). Values are walked over `shape` with element strides; the
/// output is dense int64.
struct SearchParams {
  int64_t n;
  int64_t m;
  int32_t ndim;
  int32_t right;
  int64_t shape[kKernelMaxDims];
  int64_t value_strides[kKernelMaxDims];
  const void* sorted;
  int64_t sorted_stride;  // elements
  const int64_t* sorter;  // null: sorted is in order
  int64_t sorter_stride;
  const void* values;
  int64_t* out;
};

static_assert(sizeof(SearchParams) == 24 + 128 + 48, "SearchParams layout changed");

/// One pass of the stable merge sort of `rows` contiguous rows of n keys: runs of `width`
/// sorted elements are merged in pairs. Each element finds its place in the merged run with a
/// binary search in the other run (ties: the left run first) and moves there, with its int64
/// index when `idx_in` is not null.
struct MergeParams {
  int64_t total;  // rows * n
  int64_t n;
  int64_t width;
  const void* keys_in;
  void* keys_out;
  const int64_t* idx_in;
  int64_t* idx_out;
};

static_assert(sizeof(MergeParams) == 56, "MergeParams layout changed");

/// a before b in NumPy's sort order.
template <typename T>
PGK_HD bool SortLess(T a, T b) {
  if constexpr (IsComplexT<T>::value) {
    // Real parts first; a NaN part sorts after every number.
    const auto ar = a.re, ai = a.im, br = b.re, bi = b.im;
    if (ar < br) return ai == ai || bi != bi;
    if (ar > br) return bi != bi && ai == ai;
    if (ar == br || (ar != ar && br != br)) return ai < bi || (bi != bi && ai == ai);
    return br != br;
  } else if constexpr (IsNarrowFloatT<T>::value) {
    return SortLess(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    return a < b || (b != b && a == a);
  } else {
    return a < b;
  }
}

/// The insertion point of value i (see SearchParams).
template <typename T>
PGK_HD void SearchElement(const SearchParams& p, int64_t i) {
  const T* sorted = static_cast<const T*>(p.sorted);
  const T v = static_cast<const T*>(p.values)[OffsetOf(i, p.ndim, p.shape, p.value_strides)];
  int64_t lo = 0, hi = p.m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const int64_t at = p.sorter != nullptr ? p.sorter[mid * p.sorter_stride] : mid;
    const T s = sorted[at * p.sorted_stride];
    // left: first s not less than v; right: first s greater than v.
    const bool go_right = p.right ? !SortLess(v, s) : SortLess(s, v);
    if (go_right) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  p.out[i] = lo;
}

/// Moves element t of a merge pass to its place (see MergeParams).
template <typename T>
PGK_HD void MergeElement(const MergeParams& p, int64_t t) {
  const T* in = static_cast<const T*>(p.keys_in);
  const int64_t row = t / p.n * p.n, j = t - row;
  const int64_t start = j / (2 * p.width) * (2 * p.width);
  const int64_t mid = start + p.width < p.n ? start + p.width : p.n;
  const int64_t end = mid + p.width < p.n ? mid + p.width : p.n;
  const T v = in[t];
  // Count the other run's elements that go before v: from the right run, those less than v;
  // from the left run, those not greater (equal ones keep their earlier place).
  const bool left = j < mid;
  int64_t lo = left ? mid : start, hi = left ? end : mid;
  const int64_t base = lo;
  while (lo < hi) {
    const int64_t m = lo + (hi - lo) / 2;
    const T o = in[row + m];
    if (left ? SortLess(o, v) : !SortLess(v, o)) {
      lo = m + 1;
    } else {
      hi = m;
    }
  }
  const int64_t before = lo - base;
  const int64_t dest = row + start + (left ? j - start : j - mid) + before;
  static_cast<T*>(p.keys_out)[dest] = v;
  if (p.idx_in != nullptr) p.idx_out[dest] = p.idx_in[t];
}

}  // namespace pygpukit::kernels
