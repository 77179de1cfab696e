#include "core/status.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace pygpukit {
namespace {

constexpr absl::string_view kPayloadUrl = "pygpukit/error-type";

absl::Status WithType(absl::StatusCode code, absl::string_view msg, absl::string_view type) {
  absl::Status s(code, msg);
  s.SetPayload(kPayloadUrl, absl::Cord(type));
  return s;
}

}  // namespace

absl::Status ValueError(absl::string_view msg) { return absl::InvalidArgumentError(msg); }
absl::Status TypeError(absl::string_view msg) {
  return WithType(absl::StatusCode::kInvalidArgument, msg, "type");
}
absl::Status IndexError(absl::string_view msg) { return absl::OutOfRangeError(msg); }
absl::Status MemoryError(absl::string_view msg) { return absl::ResourceExhaustedError(msg); }
absl::Status NotImplementedError(absl::string_view msg) { return absl::UnimplementedError(msg); }
absl::Status RuntimeError(absl::string_view msg) { return absl::InternalError(msg); }
absl::Status OverflowError(absl::string_view msg) {
  return WithType(absl::StatusCode::kOutOfRange, msg, "overflow");
}
absl::Status TaskRejectedError(absl::string_view msg) {
  return WithType(absl::StatusCode::kUnavailable, msg, "task-rejected");
}

absl::Status WithOp(absl::string_view op, const absl::Status& s) {
  if (s.ok() || absl::StartsWith(s.message(), absl::StrCat(op, ":"))) return s;
  absl::Status out(s.code(), absl::StrCat(op, ": ", s.message()));
  s.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

ErrorType ErrorTypeOf(const absl::Status& s) {
  auto payload = s.GetPayload(kPayloadUrl);
  if (payload.has_value()) {
    if (*payload == "type") return ErrorType::kType;
    if (*payload == "overflow") return ErrorType::kOverflow;
    if (*payload == "task-rejected") return ErrorType::kTaskRejected;
  }
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return ErrorType::kValue;
    case absl::StatusCode::kOutOfRange:
      return ErrorType::kIndex;
    case absl::StatusCode::kResourceExhausted:
      return ErrorType::kMemory;
    case absl::StatusCode::kUnimplemented:
      return ErrorType::kNotImplemented;
    default:
      return ErrorType::kRuntime;
  }
}

}  // namespace pygpukit
