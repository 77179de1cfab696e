#include "ops/array.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit {

GPUArray::GPUArray(std::shared_ptr<Buffer> buffer, DType dtype, Shape shape, Strides strides,
                   int64_t offset)
    : buffer_(std::move(buffer)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      size_(NumElements(shape_)),
      contiguous_(IsContiguous(shape_, strides_)) {}

bool GPUArray::writable() const {
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] > 1 && strides_[d] == 0) return false;
  }
  return true;
}

absl::Status CheckWritable(const GPUArray& a, absl::string_view op, absl::string_view what) {
  if (a.writable()) return absl::OkStatus();
  return ValueError(absl::StrCat(op, ": ", what, " (shape ", ShapeToString(a.shape()),
                                 ") is a broadcast view: several of its elements share memory, "
                                 "so it is read-only (copy it to write)"));
}

}  // namespace pygpukit
