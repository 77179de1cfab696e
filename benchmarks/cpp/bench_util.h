// Shared by the C++ microbenchmarks: a failed setup step ends the run with a message naming the
// benchmark binary and the step (a benchmark must not time a failing path).
#pragma once

#include <cerrno>  // program_invocation_short_name (glibc)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pygpukit::bench {

/// Exits with "<program>: <what>: <error>" unless `s` is OK. With _Exit, not exit: the step may
/// fail on one thread while others still use the runtime, and static destructors would race them.
inline void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
                 std::string(s.message()).c_str());
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

/// The value of `v`, or Check's exit.
template <typename T>
T OrDie(absl::StatusOr<T> v, const char* what) {
  Check(v.status(), what);
  return *std::move(v);
}

}  // namespace pygpukit::bench
