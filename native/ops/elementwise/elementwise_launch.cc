// The elementwise family's launches (LaunchElementwise, LaunchUserElementwise) and the helpers
// both backends share: overlap between the output and the inputs, cast-first operands.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

// First and one-past-last byte an array's elements occupy, relative to its buffer.
std::pair<int64_t, int64_t> ByteRange(const GPUArray& a) {
  int64_t lo = a.offset(), hi = a.offset();
  for (int d = 0; d < a.ndim(); ++d) {
    const int64_t span = (a.shape()[d] - 1) * a.strides()[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo * a.itemsize(), (hi + 1) * a.itemsize()};
}

}  // namespace

// Whether a and b may have a byte in common: their byte ranges intersect and their element
// addresses are not kept apart by the strides' common divisor (interleaved views, such as
// x[::2] and x[1::2], are disjoint).
bool MayShareMemory(const GPUArray& a, const GPUArray& b) {
  if (a.buffer() != b.buffer() || a.size() == 0 || b.size() == 0) return false;
  const auto [a0, a1] = ByteRange(a);
  const auto [b0, b1] = ByteRange(b);
  if (a1 <= b0 || b1 <= a0) return false;
  // Every difference of element addresses is (a's offset - b's offset) modulo g.
  int64_t g = 0;
  for (const GPUArray* x : {&a, &b}) {
    for (int d = 0; d < x->ndim(); ++d) {
      if (x->shape()[d] > 1) g = std::gcd(g, x->strides()[d] * x->itemsize());
    }
  }
  if (g == 0) return true;  // two single elements whose bytes intersect
  const int64_t r = (((a.offset() * a.itemsize() - b.offset() * b.itemsize()) % g) + g) % g;
  // a's element starts r bytes (mod g) after b's: disjoint when neither reaches into the other.
  return !(r >= b.itemsize() && g - r >= a.itemsize());
}

// Whether writing `out` element by element could change what `in` reads later: they share
// memory and element i of `in` is not exactly element i of `out` (same address, same dtype).
bool Conflicts(const GPUArray& out, const GPUArray& in) {
  if (!MayShareMemory(out, in)) return false;
  if (in.dtype() != out.dtype() || in.offset() != out.offset()) return true;
  for (int d = 0; d < out.ndim(); ++d) {
    if (out.shape()[d] != 1 && in.strides()[d] != out.strides()[d]) return true;
  }
  return false;
}

absl::StatusOr<CastFirst> ConvertInputs(const EwLaunch& l, const GPUArray& out) {
  CastFirst c;
  c.temporary = out.dtype() != l.result;
  for (const EwLaunch::Input& in : l.inputs) {
    GPUArray v;
    if (in.array != nullptr) {
      PGK_ASSIGN_OR_RETURN(GPUArray cast, AsType(*in.array, in.compute, /*copy=*/false));
      PGK_ASSIGN_OR_RETURN(v, BroadcastTo(cast, out.shape()));
      c.temporary = c.temporary || Conflicts(out, v);
    }
    c.inputs.push_back(std::move(v));
  }
  c.dst = out;
  if (c.temporary) {
    PGK_ASSIGN_OR_RETURN(c.dst, NewArray(out.shape(), l.result, out.device(), l.name));
  }
  return c;
}

absl::Status LaunchUserElementwise(const UserEwLaunch& l, absl::Span<const GPUArray> inputs,
                                   absl::Span<const GPUArray> outs) {
  if (outs.empty()) return RuntimeError(absl::StrCat(l.spec.name, ": no output"));
  const GPUArray& out = outs[0];
  for (const GPUArray& o : outs) {
    if (absl::Span<const int64_t>(o.shape()) != absl::Span<const int64_t>(out.shape())) {
      return RuntimeError(absl::StrCat(l.spec.name, ": outputs of shapes ",
                                       ShapeToString(out.shape()), " and ",
                                       ShapeToString(o.shape())));
    }
  }
  if (out.size() == 0) return absl::OkStatus();
  // Outputs sharing memory would race (several threads writing one element).
  for (size_t j = 0; j < outs.size(); ++j) {
    for (size_t k = 0; k < j; ++k) {
      if (MayShareMemory(outs[j], outs[k])) {
        auto name = [&](size_t i) {
          const size_t at = l.spec.inputs.size() + i;
          return at < l.spec.names.size() ? absl::StrCat("\"", l.spec.names[at], "\"")
                                          : absl::StrCat(i);
        };
        return ValueError(absl::StrCat(l.spec.name, ": outputs ", name(k), " and ", name(j),
                                       " (shape ", ShapeToString(outs[j].shape()),
                                       ") may share memory"));
      }
    }
  }
  // An output that overlaps an input other than element for element is computed into a
  // temporary and copied afterwards.
  absl::InlinedVector<GPUArray, 2> dsts(outs.begin(), outs.end());
  absl::InlinedVector<bool, 2> temporary(outs.size(), false);
  absl::InlinedVector<const GPUArray*, 6> arrays;
  for (const GPUArray& in : inputs) {
    if (in.valid()) arrays.push_back(&in);
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    for (const GPUArray& in : inputs) {
      temporary[j] = temporary[j] || (in.valid() && Conflicts(outs[j], in));
    }
    if (temporary[j]) {
      PGK_ASSIGN_OR_RETURN(dsts[j],
                           NewArray(outs[j].shape(), outs[j].dtype(), out.device(), l.spec.name));
      // The body may read the output's values (spec.read_outputs).
      if (l.spec.read_outputs) PGK_RETURN_IF_ERROR(Assign(dsts[j], outs[j]));
    }
    arrays.push_back(&dsts[j]);
  }
  {
    PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open(l.spec.name, arrays));
    PGK_RETURN_IF_ERROR(kUserElementwiseKernel(ctx, l, dsts, inputs));
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    if (temporary[j]) PGK_RETURN_IF_ERROR(Assign(outs[j], dsts[j]));
  }
  return absl::OkStatus();
}

absl::Status LaunchElementwise(const EwLaunch& l, const GPUArray& out) {
  if (out.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::OnDevice(l.name, out.device()));
  return kElementwiseKernel(ctx, l, out);
}

}  // namespace pygpukit::ops
