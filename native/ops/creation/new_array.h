// Making op outputs: a new array from the device's pool, and a Python scalar encoded as one
// element of a dtype (fills, scalar operands). Used by every family's op layer.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/device.h"
#include "core/dtype.h"
#include "ops/array.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// A new C-contiguous array from the device's memory pool; validation errors name `op`.
absl::StatusOr<GPUArray> NewArray(absl::Span<const int64_t> shape, DType dtype, Device device,
                                  absl::string_view op);

/// Encodes a scalar as `dtype` into the first bytes of `out16` (the rest zeroed); OverflowError
/// when an integer does not fit an integer dtype.
absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16, absl::string_view op);

}  // namespace pygpukit::ops
