// Kernels that move elements without looking at their values (fill, gather, scatter) are
// instantiated per element size, not per dtype: VisitWord picks the word type.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/scalar_types.h"
#include "core/status.h"

namespace pygpukit::ops {

/// fn(Word{}) with Word the type of `itemsize` bytes (uint8_t ... uint64_t, complex128 for 16);
/// NotImplementedError naming `op` for other sizes.
template <typename Fn>
absl::Status VisitWord(int itemsize, absl::string_view op, Fn&& fn) {
  switch (itemsize) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    case 16:
      return fn(complex128{});
  }
  return NotImplementedError(absl::StrCat(op, ": no kernel for ", itemsize, "-byte elements"));
}

}  // namespace pygpukit::ops
