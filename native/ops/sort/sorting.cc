// sort / argsort (a stable LSD radix sort on the device, ops/sort/radix.h; a merge sort for
// complex values, ops/sort/search.h) and the set functions
// built on it (unique_values / counts / inverse / all: sorted runs, their first elements through
// nonzero, counts from their positions, inverse indices by searchsorted).
#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/sort/radix.h"
#include "ops/sort/sort_kernels.h"

namespace pygpukit::ops {
namespace {

struct Rows {
  GPUArray keys;  // (..., n) contiguous, each row sorted (values; invalid when not asked for)
  GPUArray idx;   // the same shape, int64 positions along the sorted axis (when asked)
};

// The stable LSD radix sort of the rows of v (the sorted axis last; every dtype but complex):
// keys made from the values (a copy first when v is not dense), one pass per 8 key bits, then
// (several rows) passes over each element's row, carried in its flat index, so rows come out
// whole. The last pass writes values and row positions instead of keys and flat indices.
absl::StatusOr<Rows> RadixSortRows(const GPUArray& v, bool descending, bool with_idx,
                                   bool canonical, bool want_keys) {
  const int64_t n = v.shape().back(), total = v.size(), rows = total / n;
  const Device dev = v.device();
  const DType dt = v.dtype();
  Rows r;
  GPUArray src = v;
  if (v.is_contiguous()) {
    PGK_ASSIGN_OR_RETURN(r.keys, Empty(v.shape(), dt, dev));
  } else {
    PGK_ASSIGN_OR_RETURN(src, Copy(v));  // transformed in place
    r.keys = src;
  }
  const bool need_idx = with_idx || rows > 1;
  if (need_idx) {
    PGK_ASSIGN_OR_RETURN(r.idx, Empty(v.shape(), DType::Int64, dev));
  }
  PGK_RETURN_IF_ERROR(LaunchRadixKey(src, r.keys, r.idx, canonical));
  RadixFinish finish;
  finish.canonical = canonical;
  finish.row_len = n;
  finish.reversed = descending;
  if (n == 1) {
    if (!with_idx) r.idx = GPUArray();
    if (!want_keys) r.keys = GPUArray();
    if (r.keys.valid() || r.idx.valid()) {
      PGK_RETURN_IF_ERROR(LaunchRadixFinish(r.keys, r.idx, dt, finish));
    }
    return r;
  }
  PGK_ASSIGN_OR_RETURN(GPUArray keys2, Empty(v.shape(), dt, dev));
  GPUArray idx2;
  if (need_idx) {
    PGK_ASSIGN_OR_RETURN(idx2, Empty(v.shape(), DType::Int64, dev));
  }
  const int64_t tiles = (total + kernels::kRadixTile - 1) / kernels::kRadixTile;
  PGK_ASSIGN_OR_RETURN(GPUArray counts,
                       Empty({tiles * kernels::kRadixBuckets}, DType::UInt32, dev));
  PGK_ASSIGN_OR_RETURN(GPUArray totals, Empty({kernels::kRadixBuckets}, DType::UInt32, dev));
  // bool keys are 0 or 1.
  const int key_bits = dt == DType::Bool ? 1 : 8 * static_cast<int>(v.itemsize());
  const int row_bits = rows > 1 ? std::bit_width(static_cast<uint64_t>(rows - 1)) : 0;
  struct Pass {
    int shift, bits;
    bool from_row;
  };
  std::vector<Pass> plan;
  for (int shift = 0; shift < key_bits; shift += kernels::kRadixBits) {
    plan.push_back({shift, std::min(kernels::kRadixBits, key_bits - shift), false});
  }
  for (int shift = 0; shift < row_bits; shift += kernels::kRadixBits) {
    plan.push_back({shift, std::min(kernels::kRadixBits, row_bits - shift), true});
  }
  for (size_t k = 0; k < plan.size(); ++k) {
    const bool last = k + 1 == plan.size();
    PGK_RETURN_IF_ERROR(LaunchRadixPass(r.keys, last && !want_keys ? GPUArray() : keys2, r.idx,
                                        last && !with_idx ? GPUArray() : idx2, counts, totals,
                                        plan[k].shift, plan[k].bits, plan[k].from_row, n,
                                        last ? &finish : nullptr));
    std::swap(r.keys, keys2);
    std::swap(r.idx, idx2);
  }
  if (!with_idx) r.idx = GPUArray();
  if (!want_keys) r.keys = GPUArray();
  return r;
}

// The merge sort (log2(n) passes; search.h) for what radix keys cannot order: complex values
// (NumPy puts a NaN in either part after every number, which no per-part key expresses) and
// more elements than radix slot offsets reach.
absl::Status MergeSortRows(Rows& r, int64_t n, bool descending, bool with_idx) {
  const Device dev = r.keys.device();
  if (with_idx) {
    PGK_ASSIGN_OR_RETURN(GPUArray i, descending ? ArangeInt(n - 1, -1, -1, DType::Int64, dev)
                                                : ArangeInt(0, n, 1, DType::Int64, dev));
    PGK_ASSIGN_OR_RETURN(GPUArray spread, BroadcastTo(i, r.keys.shape()));
    PGK_ASSIGN_OR_RETURN(r.idx, Copy(spread));
  }
  if (n <= 1) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(GPUArray keys2, Empty(r.keys.shape(), r.keys.dtype(), dev));
  GPUArray idx2;
  if (with_idx) {
    PGK_ASSIGN_OR_RETURN(idx2, Empty(r.keys.shape(), DType::Int64, dev));
  }
  for (int64_t width = 1; width < n; width *= 2) {
    PGK_RETURN_IF_ERROR(LaunchMerge(r.keys, keys2, r.idx, idx2, n, width));
    std::swap(r.keys, keys2);
    std::swap(r.idx, idx2);
  }
  return absl::OkStatus();
}

// x sorted along `axis`, which becomes the last one. Descending order sorts the reversed rows
// ascending (a stable sort; reversed back later), so equal elements keep their order and NaN
// comes first, as in the Array API's reference behaviour. `canonical` radix keys make -0.0 and
// 0.0 (and all NaNs) equal, so their order is the stable one: what indices need. Sorted values
// use exact keys, which keep each value's bits (-0.0 then sorts before 0.0; a NaN loses its
// sign).
absl::StatusOr<Rows> SortRows(const GPUArray& x, int axis, bool descending, bool with_idx,
                              bool canonical, bool want_keys = true) {
  const int64_t src[] = {axis}, dst[] = {-1};
  PGK_ASSIGN_OR_RETURN(GPUArray v, MoveAxis(x, src, dst));
  const int64_t last[] = {-1};
  if (descending) {
    PGK_ASSIGN_OR_RETURN(v, Flip(v, absl::MakeConstSpan(last)));
  }
  const int64_t n = x.shape()[axis];
  if (v.size() > 0 && !IsComplex(x.dtype()) && v.size() <= kernels::kRadixMaxElements) {
    return RadixSortRows(v, descending, with_idx, canonical, want_keys);
  }
  Rows r;
  PGK_ASSIGN_OR_RETURN(r.keys, Copy(v));
  if (r.keys.size() == 0) {
    if (with_idx) {
      PGK_ASSIGN_OR_RETURN(r.idx, Empty(r.keys.shape(), DType::Int64, x.device()));
    }
    return r;
  }
  PGK_RETURN_IF_ERROR(MergeSortRows(r, n, descending, with_idx));
  return r;
}

// `a` (sorted rows) back in x's layout: reversed for descending order, the last axis moved to
// `axis`; a contiguous array.
absl::StatusOr<GPUArray> Restore(const GPUArray& a, int axis, bool descending) {
  GPUArray v = a;
  const int64_t last[] = {-1}, to[] = {axis};
  if (descending) {
    PGK_ASSIGN_OR_RETURN(v, Flip(v, absl::MakeConstSpan(last)));
  }
  PGK_ASSIGN_OR_RETURN(v, MoveAxis(v, last, to));
  return Contiguous(v);
}

absl::StatusOr<int> SortAxis(const GPUArray& x, int64_t axis, absl::string_view op) {
  if (x.ndim() == 0) {
    return ValueError(absl::StrCat(op, ": needs an array of at least one dimension"));
  }
  return NormalizeAxis(axis, x.ndim(), op);
}

}  // namespace

absl::StatusOr<GPUArray> Sort(const GPUArray& x, int64_t axis, bool descending) {
  PGK_ASSIGN_OR_RETURN(int ax, SortAxis(x, axis, "sort"));
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(x, ax, descending, /*with_idx=*/false,
                                        /*canonical=*/false));
  return Restore(r.keys, ax, descending);
}

absl::StatusOr<GPUArray> ArgSort(const GPUArray& x, int64_t axis, bool descending) {
  PGK_ASSIGN_OR_RETURN(int ax, SortAxis(x, axis, "argsort"));
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(x, ax, descending, /*with_idx=*/true,
                                        /*canonical=*/true, /*want_keys=*/false));
  return Restore(r.idx, ax, descending);
}

absl::StatusOr<UniqueResult> Unique(const GPUArray& x, bool indices, bool inverse, bool counts) {
  PGK_ASSIGN_OR_RETURN(GPUArray flat, Reshape(x, {-1}));
  const int64_t n = flat.size();
  // With indices, -0.0 and 0.0 must be one value whose first occurrence leads its run:
  // canonical keys, the values then taken from x.
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(flat, 0, /*descending=*/false, indices,
                                        /*canonical=*/indices));
  UniqueResult u;
  if (n == 0) {
    PGK_ASSIGN_OR_RETURN(u.values, Empty({0}, x.dtype(), x.device()));
    PGK_ASSIGN_OR_RETURN(u.indices, Empty({0}, DType::Int64, x.device()));
    PGK_ASSIGN_OR_RETURN(u.inverse_indices, Empty(x.shape(), DType::Int64, x.device()));
    PGK_ASSIGN_OR_RETURN(u.counts, Empty({0}, DType::Int64, x.device()));
    return u;
  }
  // Each run of equal values starts where a value differs from its predecessor (NaN never
  // equals anything, so every NaN is a value of its own, as the Array API asks).
  PGK_ASSIGN_OR_RETURN(GPUArray head, Full({1}, Scalar::Bool(true), DType::Bool, x.device()));
  const GPUArray& k = r.keys;  // contiguous, 1-D
  GPUArray later(k.buffer(), k.dtype(), Shape{n - 1}, Strides{1}, k.offset() + 1);
  GPUArray earlier(k.buffer(), k.dtype(), Shape{n - 1}, Strides{1}, k.offset());
  PGK_ASSIGN_OR_RETURN(GPUArray differs, Binary(ElementwiseOp::kNotEqual, later, earlier));
  const GPUArray parts[] = {head, differs};
  PGK_ASSIGN_OR_RETURN(GPUArray starts_mask, Concat(parts, 0));
  PGK_ASSIGN_OR_RETURN(std::vector<GPUArray> nz, Nonzero(starts_mask));
  const GPUArray& starts = nz[0];
  if (indices) {
    // The stable sort keeps equal values in their original order: a run's first element is
    // the value's first occurrence.
    PGK_ASSIGN_OR_RETURN(u.indices, Take(r.idx, starts, 0));
    PGK_ASSIGN_OR_RETURN(u.values, Take(flat, u.indices, 0));
  } else {
    PGK_ASSIGN_OR_RETURN(u.values, Take(r.keys, starts, 0));
  }
  if (counts) {
    PGK_ASSIGN_OR_RETURN(GPUArray end, Full({1}, Scalar::Int(n), DType::Int64, x.device()));
    PGK_ASSIGN_OR_RETURN(u.counts, Diff(starts, 0, 1, std::nullopt, end));
  }
  if (inverse) {
    PGK_ASSIGN_OR_RETURN(GPUArray where, SearchSorted(u.values, flat, false, std::nullopt));
    PGK_ASSIGN_OR_RETURN(u.inverse_indices, Reshape(where, x.shape()));
  }
  return u;
}

}  // namespace pygpukit::ops
