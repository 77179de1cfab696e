// Error handling: every fallible path returns absl::Status / absl::StatusOr. The helpers below
// build statuses that carry the Python exception type they map to (the binding maps them once),
// and the macros are the one error-propagation family used across the code base.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit {

/// Python exception a status maps to.
enum class ErrorType {
  kValue,
  kType,
  kIndex,
  kMemory,
  kNotImplemented,
  kRuntime,
  kOverflow,
  kTaskRejected
};

/// ValueError: bad shapes, axes, arguments.
absl::Status ValueError(absl::string_view msg);
/// TypeError: unsupported dtypes or argument types.
absl::Status TypeError(absl::string_view msg);
/// IndexError: index out of range.
absl::Status IndexError(absl::string_view msg);
/// MemoryError: an allocation could not be satisfied.
absl::Status MemoryError(absl::string_view msg);
/// NotImplementedError: a valid request this build cannot serve.
absl::Status NotImplementedError(absl::string_view msg);
/// RuntimeError: backend / driver failures.
absl::Status RuntimeError(absl::string_view msg);
/// OverflowError: a Python integer does not fit the target dtype.
absl::Status OverflowError(absl::string_view msg);
/// TaskRejected (a RuntimeError): admission control refused a scheduler task.
absl::Status TaskRejectedError(absl::string_view msg);

/// The Python exception type a (non-OK) status maps to.
ErrorType ErrorTypeOf(const absl::Status& s);

/// `s` with "<op>: " before its message (code and exception type kept), unless the message
/// names `op` first already: an op built on others reports errors under its own name
/// ("linspace: arange: ..." rather than "arange: ...").
absl::Status WithOp(absl::string_view op, const absl::Status& s);
template <typename T>
absl::StatusOr<T> WithOp(absl::string_view op, absl::StatusOr<T> r) {
  if (r.ok()) return r;
  return WithOp(op, r.status());
}

}  // namespace pygpukit

#define PGK_STATUS_CONCAT_INNER_(a, b) a##b
#define PGK_STATUS_CONCAT_(a, b) PGK_STATUS_CONCAT_INNER_(a, b)

/// Returns the status from the enclosing function if `expr` is not OK.
#define PGK_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::absl::Status pgk_status_ = (expr);       \
    if (!pgk_status_.ok()) return pgk_status_; \
  } while (0)

/// `PGK_ASSIGN_OR_RETURN(auto x, F());` assigns the value of a StatusOr or returns its error.
#define PGK_ASSIGN_OR_RETURN(lhs, expr) \
  PGK_ASSIGN_OR_RETURN_IMPL_(PGK_STATUS_CONCAT_(pgk_statusor_, __LINE__), lhs, expr)
#define PGK_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
