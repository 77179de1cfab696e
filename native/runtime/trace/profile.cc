#include "runtime/trace/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "runtime/runtime.h"
#include "runtime/sched/task_state.h"

namespace pygpukit {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsLaunch(TraceKind k) {
  return k == TraceKind::kKernel || k == TraceKind::kHostTask || k == TraceKind::kLibrary ||
         k == TraceKind::kCopy;
}

const std::string& NameOf(const TraceRecord& r) {
  static const std::string empty;
  return r.name != nullptr ? *r.name : empty;
}

// Linear interpolation between the nearest ranks of an ascending list.
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double pos = static_cast<double>(sorted.size() - 1) * q / 100;
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double Field(const KernelStats& s, absl::string_view f) {
  if (f == "calls") return static_cast<double>(s.calls);
  if (f == "gpu_total_ms") return s.gpu_total_ms;
  if (f == "gpu_mean_ms") return s.gpu_mean_ms;
  if (f == "gpu_p50_ms") return s.gpu_p50_ms;
  if (f == "gpu_p99_ms") return s.gpu_p99_ms;
  if (f == "host_total_ms") return s.host_total_ms;
  if (f == "tflops") return s.tflops;
  return s.gbps;
}

// JSON string literal of `s` (quotes, backslashes and control characters escaped).
void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string Json(absl::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// Microseconds, as Chrome traces count time.
std::string Us(double ns) { return absl::StrFormat("%.3f", ns / 1e3); }
}  // namespace

std::vector<KernelStats> KernelTable(absl::Span<const TraceRecord> records) {
  std::vector<KernelStats> rows;
  std::vector<std::vector<double>> gpu;
  std::vector<int64_t> timed_flops, timed_bytes;
  absl::flat_hash_map<const std::string*, size_t> index;
  for (const TraceRecord& r : records) {
    if (!IsLaunch(r.kind)) continue;
    auto [it, fresh] = index.try_emplace(r.name, rows.size());
    if (fresh) {
      KernelStats s;
      s.name = NameOf(r);
      s.kind = r.kind;
      rows.push_back(std::move(s));
      gpu.emplace_back();
      timed_flops.push_back(0);
      timed_bytes.push_back(0);
    }
    const size_t i = it->second;
    KernelStats& s = rows[i];
    ++s.calls;
    s.host_total_ms += static_cast<double>(r.end_ns - r.begin_ns) / 1e6;
    s.flops += r.flops;
    s.bytes += r.bytes;
    if (r.gpu_ms >= 0) {
      gpu[i].push_back(r.gpu_ms);
      timed_flops[i] += r.flops;
      timed_bytes[i] += r.bytes;
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    KernelStats& s = rows[i];
    std::vector<double>& g = gpu[i];
    std::sort(g.begin(), g.end());
    s.timed = static_cast<int64_t>(g.size());
    double total = 0;
    for (double v : g) total += v;
    s.gpu_total_ms = g.empty() ? kNaN : total;
    s.gpu_mean_ms = g.empty() ? kNaN : total / static_cast<double>(g.size());
    s.gpu_p50_ms = Percentile(g, 50);
    s.gpu_p99_ms = Percentile(g, 99);
    const bool rated = !g.empty() && total > 0;
    s.tflops = rated && timed_flops[i] > 0
                   ? static_cast<double>(timed_flops[i]) / (total * 1e-3) / 1e12
                   : kNaN;
    s.gbps = rated && timed_bytes[i] > 0
                 ? static_cast<double>(timed_bytes[i]) / (total * 1e-3) / 1e9
                 : kNaN;
  }
  return rows;
}

absl::StatusOr<std::string> SummaryText(absl::Span<const TraceRecord> records,
                                        absl::string_view sort_by) {
  if (std::find(std::begin(kSummarySortFields), std::end(kSummarySortFields), sort_by) ==
      std::end(kSummarySortFields)) {
    return ValueError(absl::StrCat("summary: sort_by must be one of ",
                                   absl::StrJoin(kSummarySortFields, ", "), "; got '", sort_by,
                                   "'"));
  }
  std::vector<KernelStats> rows = KernelTable(records);
  std::stable_sort(rows.begin(), rows.end(), [&](const KernelStats& a, const KernelStats& b) {
    const double x = Field(a, sort_by), y = Field(b, sort_by);
    if (std::isnan(y)) return !std::isnan(x);  // unknown values last
    return !std::isnan(x) && x > y;
  });
  auto num = [](double v, int digits) {
    return std::isnan(v) ? std::string("-") : absl::StrFormat("%.*f", digits, v);
  };
  std::string out =
      absl::StrFormat("%-40s %7s %11s %9s %9s %9s %11s %8s %8s\n", "name", "calls", "gpu total",
                      "mean", "p50", "p99", "host total", "TFLOP/s", "GB/s");
  out += std::string(out.size() - 1, '-') + "\n";
  for (const KernelStats& s : rows) {
    absl::StrAppendFormat(&out, "%-40s %7d %11s %9s %9s %9s %11s %8s %8s\n", s.name.substr(0, 40),
                          s.calls, num(s.gpu_total_ms, 4), num(s.gpu_mean_ms, 4),
                          num(s.gpu_p50_ms, 4), num(s.gpu_p99_ms, 4), num(s.host_total_ms, 4),
                          num(s.tflops, 2), num(s.gbps, 1));
  }
  int64_t allocs = 0;
  for (const TraceRecord& r : records) allocs += r.kind == TraceKind::kAlloc ? 1 : 0;
  absl::StrAppend(&out, allocs, " allocations, ", records.size(), " records (times in ms)");
  return out;
}

std::vector<MemoryPoint> MemoryTimeline(absl::Span<const TraceRecord> records) {
  std::vector<MemoryPoint> out;
  for (const TraceRecord& r : records) {
    if ((r.kind == TraceKind::kAlloc || r.kind == TraceKind::kFree) && r.allocated >= 0) {
      out.push_back(MemoryPoint{r.begin_ns, r.device, r.allocated, r.reserved});
    }
  }
  return out;
}

std::string ChromeTraceJson(absl::Span<const TraceRecord> records) {
  // Tracks: pid 0 host threads, pid 1 device streams, pid 2 memory counters.
  std::vector<std::string> events;
  std::map<std::pair<std::string, uint64_t>, int> stream_tids;        // (device, stream) -> tid
  std::map<std::pair<std::string, uint64_t>, double> stream_free_at;  // ns
  std::map<uint32_t, bool> threads;
  for (const TraceRecord& r : records) {
    threads[r.thread] = true;
    const std::string dev = r.device.ToString();
    std::string args = absl::StrCat("\"seq\":", r.seq, ",\"device\":", Json(dev));
    const std::string name = Json(NameOf(r));
    if (IsLaunch(r.kind) || r.kind == TraceKind::kRange) {
      if (r.bytes > 0) absl::StrAppend(&args, ",\"bytes\":", r.bytes);
      if (r.flops > 0) absl::StrAppend(&args, ",\"flops\":", r.flops);
      events.push_back(absl::StrCat("{\"name\":", name, ",\"cat\":", Json(TraceKindName(r.kind)),
                                    ",\"ph\":\"X\",\"ts\":", Us(static_cast<double>(r.begin_ns)),
                                    ",\"dur\":", Us(static_cast<double>(r.end_ns - r.begin_ns)),
                                    ",\"pid\":0,\"tid\":", r.thread, ",\"args\":{", args, "}}"));
      if (r.gpu_ms >= 0) {
        const auto key = std::make_pair(dev, r.stream);
        const int tid =
            stream_tids.try_emplace(key, static_cast<int>(stream_tids.size()) + 1).first->second;
        const double start = std::max(static_cast<double>(r.begin_ns), stream_free_at[key]);
        stream_free_at[key] = start + r.gpu_ms * 1e6;
        events.push_back(absl::StrCat("{\"name\":", name, ",\"cat\":\"gpu\",\"ph\":\"X\",\"ts\":",
                                      Us(start), ",\"dur\":", Us(r.gpu_ms * 1e6),
                                      ",\"pid\":1,\"tid\":", tid, ",\"args\":{", args, "}}"));
      }
    } else if (r.kind == TraceKind::kTask) {
      absl::StrAppend(&args, ",\"task\":", r.task,
                      ",\"from\":", Json(TaskStateName(static_cast<TaskState>(r.from))),
                      ",\"to\":", Json(TaskStateName(static_cast<TaskState>(r.to))));
      const std::string label = absl::StrCat(NameOf(r), " task ", r.task, ": ",
                                             TaskStateName(static_cast<TaskState>(r.to)));
      events.push_back(absl::StrCat(
          "{\"name\":", Json(label),
          ",\"cat\":\"task\",\"ph\":\"i\",\"s\":\"t\",\"ts\":", Us(static_cast<double>(r.begin_ns)),
          ",\"pid\":0,\"tid\":", r.thread, ",\"args\":{", args, "}}"));
    } else {  // alloc, free
      absl::StrAppend(&args, ",\"bytes\":", r.bytes);
      events.push_back(absl::StrCat("{\"name\":", Json(TraceKindName(r.kind)),
                                    ",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"t\",\"ts\":",
                                    Us(static_cast<double>(r.begin_ns)),
                                    ",\"pid\":0,\"tid\":", r.thread, ",\"args\":{", args, "}}"));
      if (r.allocated >= 0) {
        events.push_back(absl::StrCat("{\"name\":", Json(absl::StrCat("memory ", dev)),
                                      ",\"ph\":\"C\",\"ts\":", Us(static_cast<double>(r.begin_ns)),
                                      ",\"pid\":2,\"args\":{\"allocated\":", r.allocated,
                                      ",\"reserved\":", r.reserved, "}}"));
      }
    }
  }
  std::vector<std::string> meta;
  const char* processes[] = {"host", "device", "memory"};
  for (int pid = 0; pid < 3; ++pid) {
    meta.push_back(absl::StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", pid,
                                ",\"args\":{\"name\":\"", processes[pid], "\"}}"));
  }
  for (const auto& [key, tid] : stream_tids) {
    meta.push_back(absl::StrCat(
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":", tid, ",\"args\":{\"name\":",
        Json(absl::StrFormat("%s stream %#x", key.first, key.second)), "}}"));
  }
  for (const auto& [thread, unused] : threads) {
    meta.push_back(absl::StrCat("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":", thread,
                                ",\"args\":{\"name\":\"thread ", thread, "\"}}"));
  }
  return absl::StrCat("{\"traceEvents\":[", absl::StrJoin(meta, ","),
                      meta.empty() || events.empty() ? "" : ",", absl::StrJoin(events, ","),
                      "],\"displayTimeUnit\":\"ms\"}");
}

ProfileSession::ProfileSession(bool gpu_timing) : since_(Tracer::Ticks()), gpu_timing_(gpu_timing) {
  Tracer::Get().BeginProfiling(gpu_timing_);
}

ProfileSession::~ProfileSession() {
  if (!stopped_) Tracer::Get().EndProfiling(gpu_timing_);
}

absl::StatusOr<std::vector<TraceRecord>> ProfileSession::Stop() {
  if (stopped_) return RuntimeError("profile: this session has already stopped");
  stopped_ = true;
  // The session's work finishes first, so that its records are complete (CPU streams free the
  // buffers their tasks held on their own threads, after the tasks).
  Runtime& rt = Runtime::Get();
  absl::Status synced;
  for (Device d : rt.devices()) {
    if (absl::Status s = rt.Synchronize(d); !s.ok() && synced.ok()) synced = s;
  }
  std::vector<TraceRecord> records = Tracer::Get().Collect(since_);
  Tracer::Get().EndProfiling(gpu_timing_);
  PGK_RETURN_IF_ERROR(synced);
  return records;
}

}  // namespace pygpukit
