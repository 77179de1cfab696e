#include "ops/array.h"

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

}  // namespace pygpukit
