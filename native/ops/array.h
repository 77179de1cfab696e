// GPUArray: a view of a device buffer (shared buffer + dtype + shape + strides + offset). Views
// (slices, transposes, broadcasts, reshapes that need no copy) share the buffer.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "runtime/memory/memory_pool.h"

namespace pygpukit {

/// An n-dimensional array on a device. Cheap to copy (the buffer is shared).
class GPUArray {
 public:
  GPUArray() = default;
  /// Wraps `buffer`; strides and offset are in elements.
  GPUArray(std::shared_ptr<Buffer> buffer, DType dtype, Shape shape, Strides strides,
           int64_t offset);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return size_; }
  int64_t itemsize() const { return ItemSize(dtype_); }
  /// size() * itemsize(), saturated at INT64_MAX: a broadcast or imported view may have more
  /// elements than bytes could count (a copy of it then fails to allocate, as it must).
  int64_t nbytes() const {
    int64_t n = 0;
    return __builtin_mul_overflow(size(), itemsize(), &n) ? INT64_MAX : n;
  }
  /// Dense C-order layout.
  bool is_contiguous() const { return contiguous_; }
  /// Address of element 0 (device address on CUDA).
  void* data() const { return static_cast<char*>(buffer_->data()) + offset_ * ItemSize(dtype_); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  bool valid() const { return buffer_ != nullptr; }
  /// False for broadcast views (a dimension of more than one element with stride 0): several
  /// elements share memory, so they are read-only, as NumPy's broadcast_to views are.
  bool writable() const;

 private:
  std::shared_ptr<Buffer> buffer_;
  DType dtype_ = DType::Float32;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  // Derived from the shape and strides once (an array never changes them): ops ask for both
  // several times per call.
  int64_t size_ = 1;  // of the default shape ()
  bool contiguous_ = true;
};

/// OK when `a` may be written; else a ValueError "<op>: <what> (shape ...) is a broadcast view
/// ...". Every op that writes into an existing array checks its destination with this.
absl::Status CheckWritable(const GPUArray& a, absl::string_view op, absl::string_view what);

/// A Python-style scalar: bool, int, float or complex. Used for fill values and for weak scalar
/// operands of arithmetic (NEP 50).
struct Scalar {
  ScalarKind kind = ScalarKind::Int;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::complex<double> c;
  // Python ints in (INT64_MAX, UINT64_MAX] (only uint64 arrays or floats can hold them).
  bool above_int64 = false;
  uint64_t u = 0;
  // Python ints beyond int64 and uint64: only floating arrays can take them (as `f`).
  bool beyond_64_bits = false;

  static Scalar Bool(bool v) { return Scalar{ScalarKind::Bool, v, v, double(v), double(v)}; }
  static Scalar Int(int64_t v) { return Scalar{ScalarKind::Int, v != 0, v, double(v), double(v)}; }
  static Scalar UInt(uint64_t v) {
    if (v <= static_cast<uint64_t>(INT64_MAX)) return Int(static_cast<int64_t>(v));
    Scalar s{ScalarKind::Int, true, static_cast<int64_t>(v), double(v), double(v)};
    s.above_int64 = true;
    s.u = v;
    return s;
  }
  /// A Python int no 64-bit integer holds, as its nearest double.
  static Scalar HugeInt(double approx) {
    Scalar s{ScalarKind::Int, true, 0, approx, approx};
    s.beyond_64_bits = true;
    return s;
  }
  static Scalar Float(double v) {
    return Scalar{ScalarKind::Float, v != 0, static_cast<int64_t>(v), v, v};
  }
  static Scalar Complex(std::complex<double> v) {
    return Scalar{ScalarKind::Complex, v != 0.0, static_cast<int64_t>(v.real()), v.real(), v};
  }
};

}  // namespace pygpukit
