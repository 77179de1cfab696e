// The sort family's launches: parameter blocks filled from arrays in a launch context, then
// the kernel of the context's backend (radix sort, merge pass, searchsorted, compaction).
#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/sort/sort_kernels.h"

namespace pygpukit::ops {
namespace {

// The transform of `dt`'s values into ordered keys (RadixKeyParams).
absl::StatusOr<kernels::RadixKeyParams> RadixKeyFor(DType dt, const RadixFinish& f) {
  kernels::RadixKeyParams p{};
  p.canonical = f.canonical ? 1 : 0;
  p.row_len = f.row_len;
  p.reversed = f.reversed ? 1 : 0;
  p.kind = IsFloating(dt)                    ? kernels::kRadixFloat
           : KindOf(dt) == DTypeKind::Signed ? kernels::kRadixSigned
                                             : kernels::kRadixUnsigned;
  switch (dt) {
    case DType::Float16:
      p.magnitude = 0x7c00;
      break;
    case DType::BFloat16:
      p.magnitude = 0x7f80;
      break;
    case DType::Float32:
      p.magnitude = 0x7f800000;
      break;
    case DType::Float64:
      p.magnitude = 0x7ff0000000000000;
      break;
    case DType::Float8E4M3Fn:
      p.magnitude = 0x7e;  // no infinity: the largest finite value; 0x7f is NaN
      break;
    case DType::Float8E5M2:
      p.magnitude = 0x7c;
      break;
    default:
      if (IsComplex(dt)) return NotImplementedError("sort: complex values have no radix key");
  }
  return p;
}

// keys (valid or not) / idx (valid or not) through the transform or the finish.
absl::Status RadixElementwise(const GPUArray* src, const GPUArray& keys, const GPUArray& idx,
                              DType dt, const RadixFinish& f, bool finish) {
  const GPUArray& shape_of = keys.valid() ? keys : idx;
  if (shape_of.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(kernels::RadixKeyParams p, RadixKeyFor(dt, f));
  // Unsigned keys are the bits: nothing to do in place.
  if (p.kind == kernels::kRadixUnsigned && !idx.valid() && src == nullptr) {
    return absl::OkStatus();
  }
  const GPUArray* k = keys.valid() ? &keys : nullptr;
  const GPUArray* i = idx.valid() ? &idx : nullptr;
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("sort", {src, k, i}));
  p.n = shape_of.size();
  if (src != nullptr) p.src = src->data();
  if (k != nullptr) p.keys = keys.data();
  if (i != nullptr) p.idx = static_cast<int64_t*>(idx.data());
  const int key_bytes = keys.valid() ? static_cast<int>(keys.itemsize()) : 8;
  return kRadixKeyKernel(ctx, key_bytes, p, finish);
}

}  // namespace

absl::Status LaunchRadixKey(const GPUArray& src, const GPUArray& keys, const GPUArray& idx,
                            bool canonical) {
  RadixFinish f;
  f.canonical = canonical;
  const bool in_place = src.buffer() == keys.buffer() && src.offset() == keys.offset();
  return RadixElementwise(in_place ? nullptr : &src, keys, idx, keys.dtype(), f, false);
}

absl::Status LaunchRadixFinish(const GPUArray& keys, const GPUArray& idx, DType dtype,
                               const RadixFinish& f) {
  return RadixElementwise(nullptr, keys, idx, dtype, f, true);
}

absl::Status LaunchRadixPass(const GPUArray& keys_in, const GPUArray& keys_out,
                             const GPUArray& idx_in, const GPUArray& idx_out,
                             const GPUArray& counts, const GPUArray& totals, int shift, int bits,
                             bool from_row, int64_t row_len, const RadixFinish* finish) {
  if (keys_in.size() == 0) return absl::OkStatus();
  const GPUArray* out = keys_out.valid() ? &keys_out : nullptr;
  const GPUArray* in_idx = idx_in.valid() ? &idx_in : nullptr;
  const GPUArray* out_idx = idx_out.valid() ? &idx_out : nullptr;
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("sort", {&keys_in, out, in_idx,
                                                                       out_idx, &counts, &totals}));
  kernels::RadixPassParams p{};
  if (finish != nullptr) {
    PGK_ASSIGN_OR_RETURN(p.key, RadixKeyFor(keys_in.dtype(), *finish));
    p.key.n = keys_in.size();
    p.finish = 1;
  }
  p.n = keys_in.size();
  p.row_len = row_len;
  p.tiles = (p.n + kernels::kRadixTile - 1) / kernels::kRadixTile;
  p.shift = shift;
  p.bits = bits;
  p.from_row = from_row ? 1 : 0;
  p.keys_in = keys_in.data();
  p.counts = static_cast<uint32_t*>(counts.data());
  p.totals = static_cast<uint32_t*>(totals.data());
  if (out != nullptr) p.keys_out = keys_out.data();
  if (in_idx != nullptr) p.idx_in = static_cast<const int64_t*>(idx_in.data());
  if (out_idx != nullptr) p.idx_out = static_cast<int64_t*>(idx_out.data());
  const int key_bytes = static_cast<int>(keys_in.itemsize());
  return kRadixPassKernel(ctx, key_bytes, p);
}

absl::StatusOr<GPUArray> LaunchCompact(const GPUArray& mask) {
  const Device dev = mask.device();
  kernels::CompactParams p{};
  p.n = mask.size();
  p.tiles = (p.n + kernels::kRadixTile - 1) / kernels::kRadixTile;
  if (p.n == 0) return NewArray({0}, DType::Int64, dev, "nonzero");
  PGK_ASSIGN_OR_RETURN(GPUArray counts, NewArray({p.tiles}, DType::UInt32, dev, "nonzero"));
  PGK_ASSIGN_OR_RETURN(GPUArray total, NewArray({}, DType::UInt32, dev, "nonzero"));
  {
    PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                         LaunchContext::Open("nonzero", {&mask, &counts, &total}));
    p.mask = static_cast<const uint8_t*>(mask.data());
    p.counts = static_cast<uint32_t*>(counts.data());
    p.totals = static_cast<uint32_t*>(total.data());
    PGK_RETURN_IF_ERROR(kCompactCountKernel(ctx, p));
  }
  PGK_ASSIGN_OR_RETURN(Scalar found, Item(total));
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray({found.i}, DType::Int64, dev, "nonzero"));
  if (found.i == 0) return out;
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open("nonzero", {&mask, &counts, &out}));
  p.mask = static_cast<const uint8_t*>(mask.data());
  p.counts = static_cast<uint32_t*>(counts.data());
  p.totals = nullptr;
  p.out = static_cast<int64_t*>(out.data());
  // The mask may be the caller's array, which another stream could change between the count
  // and the write: positions past the count read back are dropped, never written out of bounds.
  p.limit = found.i;
  PGK_RETURN_IF_ERROR(kCompactWriteKernel(ctx, p));
  return out;
}

absl::Status LaunchSearchSorted(const GPUArray& sorted, const GPUArray& sorter,
                                const GPUArray& values, bool right, const GPUArray& dst) {
  if (dst.size() == 0) return absl::OkStatus();
  const GPUArray* sorter_ptr = sorter.valid() ? &sorter : nullptr;
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                       LaunchContext::Open("searchsorted", {&sorted, sorter_ptr, &values, &dst}));
  const Strides value_strides = values.strides();
  CoalescedLayout c = Coalesce(values.shape(), {value_strides});
  if (c.shape.size() > static_cast<size_t>(kernels::kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat("searchsorted: values layout has ", c.shape.size(),
                                            " non-mergeable dimensions; kernels support ",
                                            kernels::kKernelMaxDims));
  }
  kernels::SearchParams p{};
  p.n = values.size();
  p.m = sorted.size();
  p.ndim = static_cast<int32_t>(c.shape.size());
  p.right = right ? 1 : 0;
  for (int d = 0; d < p.ndim; ++d) {
    p.shape[d] = c.shape[d];
    p.value_strides[d] = c.strides[0][d];
  }
  p.sorted = sorted.data();
  p.sorted_stride = sorted.ndim() == 1 ? sorted.strides()[0] : 1;
  if (sorter_ptr != nullptr) {
    p.sorter = static_cast<const int64_t*>(sorter.data());
    p.sorter_stride = sorter.strides()[0];
  }
  p.values = values.data();
  p.out = static_cast<int64_t*>(dst.data());
  return kSearchSortedKernel(ctx, sorted.dtype(), p);
}

absl::Status LaunchMerge(const GPUArray& keys_in, const GPUArray& keys_out, const GPUArray& idx_in,
                         const GPUArray& idx_out, int64_t n, int64_t width) {
  if (keys_in.size() == 0) return absl::OkStatus();
  const bool with_idx = idx_in.valid();
  PGK_ASSIGN_OR_RETURN(
      LaunchContext ctx,
      LaunchContext::Open("sort", {&keys_in, &keys_out, with_idx ? &idx_in : nullptr,
                                   with_idx ? &idx_out : nullptr}));
  kernels::MergeParams p{};
  p.total = keys_in.size();
  p.n = n;
  p.width = width;
  p.keys_in = keys_in.data();
  p.keys_out = keys_out.data();
  if (with_idx) {
    p.idx_in = static_cast<const int64_t*>(idx_in.data());
    p.idx_out = static_cast<int64_t*>(idx_out.data());
  }
  return kMergeKernel(ctx, keys_in.dtype(), p);
}

}  // namespace pygpukit::ops
