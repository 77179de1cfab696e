// sort / argsort (a stable merge sort on the device: log2(n) passes in which every element finds
// its place in the merged run by a binary search; ops/kernels/search.h) and the set functions
// built on it (unique_values / counts / inverse / all: sorted runs, their first elements through
// nonzero, counts from their positions, inverse indices by searchsorted).
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

struct Rows {
  GPUArray keys;  // (..., n) contiguous, each row sorted
  GPUArray idx;   // the same shape, int64 positions along the sorted axis (when asked)
};

// x sorted along `axis`, which becomes the last one. Descending order sorts the reversed rows
// ascending (a stable sort; reversed back later), so equal elements keep their order and NaN
// comes first, as in the Array API's reference behaviour.
absl::StatusOr<Rows> SortRows(const GPUArray& x, int axis, bool descending, bool with_idx) {
  const int64_t src[] = {axis}, dst[] = {-1};
  PGK_ASSIGN_OR_RETURN(GPUArray v, MoveAxis(x, src, dst));
  const int64_t last[] = {-1};
  if (descending) {
    PGK_ASSIGN_OR_RETURN(v, Flip(v, absl::MakeConstSpan(last)));
  }
  Rows r;
  PGK_ASSIGN_OR_RETURN(r.keys, Copy(v));
  const int64_t n = x.shape()[axis];
  if (with_idx) {
    PGK_ASSIGN_OR_RETURN(GPUArray i, descending ? ArangeInt(n - 1, -1, -1, DType::Int64, x.device())
                                                : ArangeInt(0, n, 1, DType::Int64, x.device()));
    PGK_ASSIGN_OR_RETURN(GPUArray spread, BroadcastTo(i, r.keys.shape()));
    PGK_ASSIGN_OR_RETURN(r.idx, Copy(spread));
  }
  if (n <= 1 || r.keys.size() == 0) return r;
  PGK_ASSIGN_OR_RETURN(GPUArray keys2, Empty(r.keys.shape(), r.keys.dtype(), x.device()));
  GPUArray idx2;
  if (with_idx) {
    PGK_ASSIGN_OR_RETURN(idx2, Empty(r.keys.shape(), DType::Int64, x.device()));
  }
  for (int64_t width = 1; width < n; width *= 2) {
    PGK_RETURN_IF_ERROR(LaunchMerge(r.keys, keys2, r.idx, idx2, n, width));
    std::swap(r.keys, keys2);
    std::swap(r.idx, idx2);
  }
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
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(x, ax, descending, /*with_idx=*/false));
  return Restore(r.keys, ax, descending);
}

absl::StatusOr<GPUArray> ArgSort(const GPUArray& x, int64_t axis, bool descending) {
  PGK_ASSIGN_OR_RETURN(int ax, SortAxis(x, axis, "argsort"));
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(x, ax, descending, /*with_idx=*/true));
  return Restore(r.idx, ax, descending);
}

absl::StatusOr<UniqueResult> Unique(const GPUArray& x, bool indices, bool inverse, bool counts) {
  PGK_ASSIGN_OR_RETURN(GPUArray flat, Reshape(x, {-1}));
  const int64_t n = flat.size();
  PGK_ASSIGN_OR_RETURN(Rows r, SortRows(flat, 0, /*descending=*/false, indices));
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
  PGK_ASSIGN_OR_RETURN(u.values, Take(r.keys, starts, 0));
  if (indices) {
    // The stable sort keeps equal values in their original order: a run's first element is
    // the value's first occurrence.
    PGK_ASSIGN_OR_RETURN(u.indices, Take(r.idx, starts, 0));
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
