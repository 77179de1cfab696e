// Internal: what has not moved into a kernel family folder yet: residency pins for ops that
// read addresses outside a LaunchContext, NewArray and EncodeScalar.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/hal/backend.h"
#include "ops/array.h"
#include "ops/elementwise/elementwise_codegen.h"
#include "ops/kernels/params.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// The buffers of `arrays` (nulls skipped), for a CPU task to hold while it runs.
KeepAlive Keep(std::initializer_list<const GPUArray*> arrays);
/// The bytes `keep` holds (what a queued CPU task keeps alive: Dispatcher::LaunchHost bounds
/// the queue by it).
int64_t HeldBytes(const KeepAlive& keep);
/// The stream work on a's device is queued on (Runtime::stream).
absl::StatusOr<hal::Stream*> StreamOf(const GPUArray& a);

/// Holds the arrays' buffers resident (paging spilled ones back in) while the caller reads
/// their device addresses and enqueues work on them.
absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays);
inline absl::StatusOr<ResidencyPin> Resident(std::initializer_list<const GPUArray*> arrays) {
  return Resident(absl::MakeConstSpan(arrays.begin(), arrays.size()));
}

/// A new C-contiguous array from the device's memory pool; validation errors name `op`.
absl::StatusOr<GPUArray> NewArray(absl::Span<const int64_t> shape, DType dtype, Device device,
                                  absl::string_view op);

/// Encodes a scalar as `dtype` (for fills and scalar operands); OverflowError when an integer
/// does not fit an integer dtype.
absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16, absl::string_view op);

}  // namespace pygpukit::ops
