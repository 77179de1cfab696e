#include "ops/launch/layout.h"

#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"

namespace pygpukit::ops {

absl::Status ElementwiseParamsOf(const GPUArray& out, const GPUArray* a, const GPUArray* b,
                                 kernels::ElementwiseParams& p, absl::string_view op) {
  using kernels::kKernelMaxDims;
  std::memset(&p, 0, sizeof(p));
  p.n = out.size();
  absl::InlinedVector<absl::Span<const int64_t>, 3> strides = {out.strides()};
  if (a) strides.push_back(a->strides());
  if (b) strides.push_back(b->strides());
  CoalescedLayout layout = Coalesce(out.shape(), strides);
  if (layout.shape.size() > static_cast<size_t>(kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat(op, ": operand layout has ", layout.shape.size(),
                                            " non-mergeable dimensions; kernels support ",
                                            kKernelMaxDims, " (make the operands contiguous)"));
  }
  p.ndim = static_cast<int32_t>(layout.shape.size());
  bool contiguous = true;
  for (int d = 0; d < p.ndim; ++d) p.shape[d] = layout.shape[d];
  for (size_t k = 0; k < strides.size(); ++k) {
    int64_t* dst = k == 0 ? p.out_strides : (k == 1 && a ? p.a_strides : p.b_strides);
    for (int d = 0; d < p.ndim; ++d) dst[d] = layout.strides[k][d];
    contiguous = contiguous && (p.ndim == 0 || (p.ndim == 1 && layout.strides[k][0] == 1));
  }
  p.contiguous = contiguous ? 1 : 0;
  p.out = out.data();
  p.a = a ? a->data() : nullptr;
  p.b = b ? b->data() : nullptr;
  return absl::OkStatus();
}

}  // namespace pygpukit::ops
