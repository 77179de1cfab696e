// Profiles built from trace records (runtime/trace/tracer.h): a session that scopes a trace, the
// per-kernel statistics and their text table, the memory timeline and the Chrome trace /
// Perfetto JSON. gp.profiler is a thin layer over these, so C++ services get the same data.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {

/// One launched name (kernel, host task, library call or copy) over a trace.
struct KernelStats {
  std::string name;
  TraceKind kind = TraceKind::kKernel;
  int64_t calls = 0;
  int64_t timed = 0;  // calls with a device time
  // Device time of the timed calls, ms (NaN when none was timed); p50 / p99 interpolate
  // linearly between the nearest ranks, as NumPy's default percentile does.
  double gpu_total_ms = kUnknown, gpu_mean_ms = kUnknown, gpu_p50_ms = kUnknown,
         gpu_p99_ms = kUnknown;
  double host_total_ms = 0;  // the host calls' own time
  // Declared work summed over all calls (0: the op declares none), and its rate over the timed
  // calls' device time (NaN without device times or declared work).
  int64_t flops = 0, bytes = 0;
  double tflops = kUnknown, gbps = kUnknown;
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
};

/// Statistics per launched name, in the order names first appear.
std::vector<KernelStats> KernelTable(absl::Span<const TraceRecord> records);

/// Fields KernelTable rows can be sorted by in SummaryText.
inline constexpr absl::string_view kSummarySortFields[] = {
    "calls",      "gpu_total_ms",  "gpu_mean_ms", "gpu_p50_ms",
    "gpu_p99_ms", "host_total_ms", "tflops",      "gbps"};

/// KernelTable as a text table, largest `sort_by` first (one of kSummarySortFields; else a
/// ValueError naming them), with a closing line counting allocations and records.
absl::StatusOr<std::string> SummaryText(absl::Span<const TraceRecord> records,
                                        absl::string_view sort_by = "gpu_total_ms");

/// The pool's allocated and reserved bytes after each allocation and free, in time order.
struct MemoryPoint {
  int64_t time_ns = 0;
  Device device;
  int64_t allocated = 0, reserved = 0;
};
std::vector<MemoryPoint> MemoryTimeline(absl::Span<const TraceRecord> records);

/// The records as a Chrome trace / Perfetto JSON document: host calls and ranges as spans on
/// their thread's track, device times on a track per stream, allocations, frees and task state
/// changes as instants, memory as a counter track per device. Device start times are not
/// measured: a device span starts at its host launch or when its stream's previous span ends,
/// whichever is later (a stream runs its work in order).
std::string ChromeTraceJson(absl::Span<const TraceRecord> records);

/// Scopes a trace: the records taken from construction to Stop(), with device times for every
/// launch and device copy when `gpu_timing` (a profiling session of the tracer). Sessions may
/// overlap, on one thread or several.
class ProfileSession {
 public:
  explicit ProfileSession(bool gpu_timing = true);
  ~ProfileSession();
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;

  /// Waits for the queued work of every device (so that the records are complete), then returns
  /// the session's records in time order. Once: a second call is a RuntimeError.
  absl::StatusOr<std::vector<TraceRecord>> Stop();
  bool stopped() const { return stopped_; }

 private:
  uint64_t since_;
  bool gpu_timing_;
  bool stopped_ = false;
};

}  // namespace pygpukit
