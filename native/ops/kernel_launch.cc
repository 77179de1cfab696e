#include "ops/kernel_launch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernels/scalar_ops.h"
#include "ops/launch/layout.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

using kernels::ElementwiseParams;
using kernels::kKernelMaxDims;

template <typename T>
bool FitsInteger(int64_t v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return v >= 0;
  } else {
    return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<T>::max());
  }
}

}  // namespace

KeepAlive Keep(std::initializer_list<const GPUArray*> arrays) {
  KeepAlive k;
  for (const GPUArray* a : arrays) {
    if (a != nullptr) k.push_back(a->buffer());
  }
  return k;
}

int64_t HeldBytes(const KeepAlive& keep) {
  int64_t bytes = 0;
  for (const auto& b : keep) {
    if (b != nullptr) bytes += static_cast<int64_t>(b->size());
  }
  return bytes;
}

absl::StatusOr<hal::Stream*> StreamOf(const GPUArray& a) {
  return Runtime::Get().stream(a.device());
}

absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays) {
  ResidencyPin pin;
  // The thread's current stream, looked up once per device (ops pass arrays of one device).
  std::optional<Device> stream_device;
  hal::Stream* s = nullptr;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const GPUArray* a = arrays[k];
    if (a == nullptr) continue;
    // A buffer named twice (x + x, views of one array) is pinned and recorded once.
    bool seen = false;
    for (size_t j = 0; j < k && !seen; ++j) {
      seen = arrays[j] != nullptr && arrays[j]->buffer() == a->buffer();
    }
    if (seen) continue;
    if (stream_device != a->device()) {
      PGK_ASSIGN_OR_RETURN(s, Runtime::Get().stream(a->device()));
      stream_device = a->device();
    }
    PGK_RETURN_IF_ERROR(PinForStream(pin, a->buffer(), *s));
  }
  return pin;
}

absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16,
                          absl::string_view op) {
  std::memset(out16, 0, 16);
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T v{};
    switch (s.kind) {
      case ScalarKind::Bool:
        v = kernels::Cast<T>(s.b);
        break;
      case ScalarKind::Int:
        if (s.beyond_64_bits) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return OverflowError(absl::StrCat(op, ": Python integer (about ", s.f,
                                              ") out of bounds for ", DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.f);
          break;
        }
        if (s.above_int64) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                        !std::is_same_v<T, uint64_t>) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.u, " out of bounds for ",
                                              DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.u);
          break;
        }
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (!FitsInteger<T>(s.i)) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.i, " out of bounds for ",
                                              DTypeName(dtype)));
          }
        }
        v = kernels::Cast<T>(s.i);
        break;
      case ScalarKind::Float:
        v = kernels::Cast<T>(s.f);
        break;
      case ScalarKind::Complex:
        v = kernels::Cast<T>(complex128(s.c.real(), s.c.imag()));
        break;
    }
    std::memcpy(out16, &v, sizeof(T));
    return absl::OkStatus();
  });
}

}  // namespace pygpukit::ops
