// Kernels that move elements without looking at their values (fill, gather, scatter) are
// instantiated per element size, not per dtype: VisitWord picks the word type.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/dtype_list.h"
#include "core/scalar_types.h"
#include "core/status.h"

namespace pygpukit::ops {

/// fn(Word{}) with Word the type of `itemsize` bytes (PGK_FOR_EACH_WORD: uint8_t ... uint64_t,
/// complex128 for 16);
/// NotImplementedError naming `op` for other sizes.
template <typename Fn>
absl::Status VisitWord(int itemsize, absl::string_view op, Fn&& fn) {
  switch (itemsize) {
#define PGK_WORD_CASE(BYTES, WORD) \
  case BYTES:                      \
    return fn(WORD{});
    PGK_FOR_EACH_WORD(PGK_WORD_CASE)
#undef PGK_WORD_CASE
  }
  return NotImplementedError(absl::StrCat(op, ": no kernel for ", itemsize, "-byte elements"));
}

}  // namespace pygpukit::ops
