// The launchers of the radix sort and of nonzero's stream compaction (ops/kernels/radix.h):
// parameter blocks filled from arrays, buffers pinned, then the CPU loops or the CUDA kernels.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/radix.h"
#include "runtime/runtime.h"

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
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({src, k, i}));
  p.n = shape_of.size();
  if (src != nullptr) p.src = src->data();
  if (k != nullptr) p.keys = keys.data();
  if (i != nullptr) p.idx = static_cast<int64_t*>(idx.data());
  const int key_bytes = keys.valid() ? static_cast<int>(keys.itemsize()) : 8;
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, StreamOf(shape_of));
  if (shape_of.device().is_cpu()) {
    return cpu_kernels::RadixKey(*s, key_bytes, p, finish, Keep({src, k, i}));
  }
  return cuda_kernels::RadixKey(*s, key_bytes, p, finish);
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
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin,
                       Resident({&keys_in, out, in_idx, out_idx, &counts, &totals}));
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
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, StreamOf(keys_in));
  if (keys_in.device().is_cpu()) {
    return cpu_kernels::RadixPass(*s, key_bytes, p,
                                  Keep({&keys_in, out, in_idx, out_idx, &counts, &totals}));
  }
  return cuda_kernels::RadixPass(*s, key_bytes, p);
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
    PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&mask, &counts, &total}));
    p.mask = static_cast<const uint8_t*>(mask.data());
    p.counts = static_cast<uint32_t*>(counts.data());
    p.totals = static_cast<uint32_t*>(total.data());
    PGK_ASSIGN_OR_RETURN(hal::Stream * s, StreamOf(mask));
    if (dev.is_cpu()) {
      PGK_RETURN_IF_ERROR(cpu_kernels::CompactCount(*s, p, Keep({&mask, &counts, &total})));
    } else {
      PGK_RETURN_IF_ERROR(cuda_kernels::CompactCount(*s, p));
    }
  }
  PGK_ASSIGN_OR_RETURN(Scalar found, Item(total));
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray({found.i}, DType::Int64, dev, "nonzero"));
  if (found.i == 0) return out;
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&mask, &counts, &out}));
  p.mask = static_cast<const uint8_t*>(mask.data());
  p.counts = static_cast<uint32_t*>(counts.data());
  p.totals = nullptr;
  p.out = static_cast<int64_t*>(out.data());
  // The mask may be the caller's array, which another stream could change between the count
  // and the write: positions past the count read back are dropped, never written out of bounds.
  p.limit = found.i;
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, StreamOf(out));
  if (dev.is_cpu()) {
    PGK_RETURN_IF_ERROR(cpu_kernels::CompactWrite(*s, p, Keep({&mask, &counts, &out})));
  } else {
    PGK_RETURN_IF_ERROR(cuda_kernels::CompactWrite(*s, p));
  }
  return out;
}

}  // namespace pygpukit::ops
