// Over 600 lines on purpose: a standalone benchmark program (arguments, loops, JSON) kept in one
// file so that it can be read and run on its own.
// Co-location benchmark of the scheduler from C++ (issue 4): benchmarks/scheduler.py's
// guaranteed loop and best-effort load with no Python in the way (no GIL hand-offs, no
// interpreter time), so that the two runs side by side tell the host's share of the latency
// inflation from the GPU's.
//
// A guaranteed loop (a g^3 bf16 matmul and three elementwise ops, synchronized every iteration)
// runs for --duration seconds while a best-effort thread keeps the device busy with b^3 bf16
// matmuls. Modes (--modes, comma-separated; default all):
//   alone         the loop on the default stream, nothing else running (the reference)
//   be_alone      the load alone (its throughput is the 100% reference)
//   plain_prio    plain streams: the loop's at the highest priority, the load's at the lowest
//   sched         the scheduler's defaults: the loop is one guaranteed task, the load
//                 best-effort tasks of --batch matmuls, --outstanding of them (2) at a time
//   sched_preempt the same with best_effort_sms = 0: no partition, best-effort matmuls on the
//                 preemptible kernels, which yield the SMs while a guaranteed task runs
//   sched_idle    the scheduler with no load: what its tasks cost the loop
//   sched_nopart  best_effort_sms = 0 and no preemption (matmuls split into row blocks)
//   sched_hold    the defaults with best_effort_inflight_while_guaranteed = 0
//   be_preempt    sched_preempt's load with no loop (nothing preempts it), in a profiling
//                 session: the preemptible path's throughput and its kernels' device time
//   alone_span    the loop alone with a timing event pair around each iteration's work: its
//                 device span, from the first launch reaching the device to the last kernel's
//                 end (host submission gaps included; recording drains the launch queue). If
//                 best-effort work must leave the device for each iteration's whole span, it
//                 keeps at most 1 - span / period (--spans records the span in every mode)
//   alone_kernels the loop alone for --kernel-iters iterations in a profiling session: its
//                 kernels' device time per iteration (gaps excluded), the bound for
//                 best-effort work that could also use the gaps
//   alone_rest    the loop alone on a partition of the SMs the scheduler's default best-effort
//                 partition leaves (sched's loop has about those while the load runs): the
//                 share of sched's inflation that fewer SMs alone explain, the rest being
//                 shared L2, memory bandwidth and power
//   alone_end     the loop alone again, after the others (host drift)
//
// --interval-us N makes the loop a service: one iteration (a request) starts every N us, or at
// once when the previous one ran late, and in the scheduler modes each request is a guaranteed
// task of its own (closed loop, the default: the whole loop is one task). Latency is counted
// from the iteration's start. Between requests the loop's thread spins (--wait spin, the
// default) or sleeps (--wait sleep): a sleeping thread wakes on a core at a lower clock with
// cold caches, which on its own made the alone loop's p99 vary from 210 to 545 us on an H200.
//
// --repeat N runs the modes in turn N times (alone, preemption, alone, ...), so that host noise
// and the GPU's clock drift spread over all of them; the JSON's "modes" then holds each field's
// median over the passes (and p99's range), "runs" every pass. Each mode also reports the SM clock
// and power draw sampled through NVML while its loop ran (gpu_clocks.h): beside a load that
// keeps the chip at its power limit, the loop's kernels run at a lower clock whatever the
// scheduler does.
//
// GPU results are committed as benchmarks/results/<gpu>-sm<XY>-scheduler-colocation-cpp.json,
// which the suite's scheduler area reads (rows "cpp <mode>").
//
//   colocation [--g-size 1024] [--be-size 8192] [--batch 2] [--outstanding 2] [--duration 3]
//              [--modes ...]
//              [--kernel-iters 2000] [--interval-us 0] [--wait spin|sleep] [--spans]
//              [--repeat 1] [--out FILE.json]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench_util.h"
#include "gpu_clocks.h"
#include "pygpukit.h"
#include "runtime/trace/profile.h"

namespace {

using namespace pygpukit;
using bench::Check;
using bench::ClockSampler;
using bench::ClockSummary;
using bench::OrDie;
using Clock = std::chrono::steady_clock;

constexpr const char* kModes[] = {"alone",         "be_alone",      "plain_prio",   "sched",
                                  "sched_preempt", "sched_idle",    "sched_nopart", "sched_hold",
                                  "alone_span",    "alone_kernels", "alone_rest",   "alone_end",
                                  "be_preempt"};

struct Args {
  int64_t g_size = 1024, be_size = 8192;
  int batch = 2;
  int outstanding = 2;          // best-effort tasks submitted at a time (scheduler modes)
  int64_t kernel_iters = 2000;  // alone_kernels: few enough for the trace rings to keep them all
  double duration = 3.0;
  double interval_us = 0;  // 0: closed loop
  bool spin = true;        // --wait spin|sleep between requests
  bool spans = false;      // --spans: each iteration's device span, in every mode
  int repeat = 1;          // --repeat: the modes in turn, this many times
  std::vector<std::string> modes{std::begin(kModes), std::end(kModes)};
  std::string out;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const bool more = i + 1 < argc;
    if (std::strcmp(argv[i], "--g-size") == 0 && more) {
      a.g_size = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--be-size") == 0 && more) {
      a.be_size = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--outstanding") == 0 && more) {
      a.outstanding = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--batch") == 0 && more) {
      a.batch = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--kernel-iters") == 0 && more) {
      a.kernel_iters = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--interval-us") == 0 && more) {
      a.interval_us = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--spans") == 0) {
      a.spans = true;
    } else if (std::strcmp(argv[i], "--wait") == 0 && more) {
      const std::string w = argv[++i];
      if (w != "spin" && w != "sleep") Check(ValueError("--wait takes spin or sleep"), "usage");
      a.spin = w == "spin";
    } else if (std::strcmp(argv[i], "--repeat") == 0 && more) {
      a.repeat = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--duration") == 0 && more) {
      a.duration = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--modes") == 0 && more) {
      a.modes = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    } else if (std::strcmp(argv[i], "--out") == 0 && more) {
      a.out = argv[++i];
    } else {
      Check(ValueError(absl::StrCat("unknown or incomplete argument '", argv[i], "'")), "usage");
    }
  }
  if (a.g_size < 1 || a.be_size < 1 || a.batch < 1 || a.outstanding < 1 || a.kernel_iters < 1 ||
      a.repeat < 1 || !(a.duration > 0) || !(a.interval_us >= 0)) {
    Check(
        ValueError("sizes, --batch, --outstanding, --kernel-iters, --repeat and --duration must be "
                   "positive, --interval-us not negative"),
        "usage");
  }
  for (const std::string& m : a.modes) {
    if (std::find(std::begin(kModes), std::end(kModes), m) == std::end(kModes)) {
      Check(ValueError(absl::StrCat("unknown mode '", m, "'; modes: ", absl::StrJoin(kModes, ","))),
            "usage");
    }
  }
  return a;
}

// Both tenants' arrays (random bf16, scaled so that products stay near 1), made once.
struct Workload {
  Device dev;
  GPUArray gx, gw, ga, bx, bw;

  Workload(Device d, int64_t g, int64_t b) : dev(d) {
    ops::PhiloxGenerator gen(1, 2);
    auto rand = [&](int64_t n, double scale) {
      GPUArray f = OrDie(ops::RandomNormal(gen, {n, n}, DType::Float32, 0.0, scale, dev), "rand");
      return OrDie(ops::AsType(f, DType::BFloat16), "astype");
    };
    gx = rand(g, 1.0);
    gw = rand(g, 1.0 / std::sqrt(double(g)));
    ga = rand(g, 1.0);
    bx = rand(b, 1.0);
    bw = rand(b, 1.0 / std::sqrt(double(b)));
    Check(Runtime::Get().Synchronize(dev), "setup");
  }

  // The work of one iteration of the guaranteed loop (benchmarks/scheduler.py's g_step).
  absl::Status GWork() const {
    PGK_ASSIGN_OR_RETURN(GPUArray y, ops::Matmul(gx, gw));
    PGK_ASSIGN_OR_RETURN(y, ops::Binary(ops::ElementwiseOp::kMultiply, y, Scalar::Float(0.5)));
    PGK_ASSIGN_OR_RETURN(y, ops::Binary(ops::ElementwiseOp::kAdd, y, ga));
    return ops::Binary(ops::ElementwiseOp::kSubtract, y, Scalar::Float(1.0)).status();
  }

  absl::Status BeMatmuls(int n) const {
    for (int i = 0; i < n; ++i) PGK_RETURN_IF_ERROR(ops::Matmul(bx, bw).status());
    return absl::OkStatus();
  }
};

struct Summary {
  std::string mode;
  int rep = 0;                     // which pass over the modes (--repeat)
  LatencySummary lat;              // the loop's iterations (nearest-rank, as scheduler.py)
  std::optional<double> be_per_s;  // best-effort matmuls per second while the loop ran
  std::optional<double> span_p50_us, span_p99_us;  // alone_span: device span per iteration
  std::optional<double> kernel_us;             // alone_kernels: kernels' device time per iteration
  std::optional<int> sms;                      // alone_rest: the partition's SMs
  std::optional<int64_t> preemptions;          // sched modes: times best-effort kernels yielded
  std::optional<ClockSummary> clocks;          // the GPU's SM clock and power while the loop ran
  std::optional<double> p99_lo_us, p99_hi_us;  // --repeat: the passes' range of p99
  // The host's time in each part of an iteration, p50 in us: Begin (scheduler modes), the
  // work's launches, the synchronize, End. Where the scheduler's own cost per request goes.
  std::optional<std::array<double, 4>> phases_us;
};

constexpr const char* kPhases[] = {"begin", "launch", "sync", "end"};

// One sampler for the process: NVML is initialized once.
ClockSampler& Clocks() {
  static ClockSampler sampler;
  return sampler;
}

// Timing events recorded around an iteration's work on the thread's current stream.
class SpanTimer {
 public:
  explicit SpanTimer(Device d) : dev_(d) {
    backend_ = OrDie(Runtime::Get().backend(d.type), "backend");
    start_ = OrDie(backend_->CreateEvent(d.index, /*timing=*/true), "event");
    end_ = OrDie(backend_->CreateEvent(d.index, /*timing=*/true), "event");
  }
  absl::Status Start() { return Record(*start_); }
  absl::Status Stop() { return Record(*end_); }
  // After the iteration's synchronize: the span in ns.
  absl::StatusOr<int64_t> SpanNs() {
    PGK_ASSIGN_OR_RETURN(float ms, backend_->ElapsedMs(*start_, *end_));
    return static_cast<int64_t>(double(ms) * 1e6);
  }

 private:
  absl::Status Record(hal::Event& e) {
    PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(dev_));
    return backend_->Record(e, *s);
  }
  Device dev_;
  hal::Backend* backend_;
  std::unique_ptr<hal::Event> start_, end_;
};

// How the loop runs: for `seconds` (or `max_iters` iterations, whichever ends first) after 20
// warm-up iterations, one every `interval_us` (0: back to back); with `spans`, each iteration's
// device span (SpanTimer) too; with `sched`, each iteration is a task of tenant "online".
struct LoopOptions {
  double seconds = 0, interval_us = 0;
  bool spin = true;
  std::vector<int64_t>* spans = nullptr;
  std::array<std::vector<int64_t>, 4>* phases = nullptr;  // each iteration's phases (kPhases)
  int64_t max_iters = INT64_MAX;
  Scheduler* sched = nullptr;
};

// Per-iteration latencies in ns.
std::vector<int64_t> GLoop(const Workload& w, const LoopOptions& o) {
  std::optional<SpanTimer> timer;
  if (o.spans != nullptr) timer.emplace(w.dev);
  std::array<Clock::time_point, 5> at;
  auto step = [&] {
    at[0] = Clock::now();
    std::optional<InlineTask> task;
    if (o.sched != nullptr) task.emplace(OrDie(o.sched->Begin("online"), "guaranteed task"));
    at[1] = Clock::now();
    if (timer) Check(timer->Start(), "span start");
    Check(w.GWork(), "guaranteed step");
    if (timer) Check(timer->Stop(), "span stop");
    at[2] = Clock::now();
    Check(Runtime::Get().Synchronize(w.dev), "guaranteed synchronize");
    at[3] = Clock::now();
    if (task) Check(task->End(), "guaranteed task end");
    at[4] = Clock::now();
  };
  for (int i = 0; i < 20; ++i) step();
  std::vector<int64_t> lat;
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(o.interval_us));
  auto next = Clock::now();
  const auto end = next + std::chrono::duration<double>(o.seconds);
  while (Clock::now() < end && static_cast<int64_t>(lat.size()) < o.max_iters) {
    if (o.interval_us > 0) {
      next = std::max(next + interval, Clock::now());  // late: at once, no catch-up burst
      if (o.spin) {
        while (Clock::now() < next) {
        }
      } else {
        std::this_thread::sleep_until(next);
      }
    }
    const auto t0 = Clock::now();
    step();
    lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    if (timer) o.spans->push_back(OrDie(timer->SpanNs(), "span"));
    for (size_t i = 0; o.phases != nullptr && i < o.phases->size(); ++i) {
      (*o.phases)[i].push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(at[i + 1] - at[i]).count());
    }
  }
  return lat;
}

// The best-effort load on its own thread: `run_batch` over and over, each batch's completion
// time kept, so that the throughput inside the loop's window can be counted.
class BeLoad {
 public:
  BeLoad(std::function<absl::Status()> run_batch, int batch)
      : run_batch_(std::move(run_batch)), batch_(batch) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        Check(run_batch_(), "best-effort batch");
        std::lock_guard<std::mutex> l(mu_);
        done_.push_back(Clock::now());
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a steady state first
  }
  ~BeLoad() {
    stop_.store(true);
    thread_.join();
  }
  double Rate(Clock::time_point t0, Clock::time_point t1) {
    std::lock_guard<std::mutex> l(mu_);
    const auto n = std::count_if(done_.begin(), done_.end(),
                                 [&](Clock::time_point t) { return t0 <= t && t <= t1; });
    return double(n) * batch_ / std::chrono::duration<double>(t1 - t0).count();
  }

 private:
  std::function<absl::Status()> run_batch_;
  int batch_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Clock::time_point> done_;
  std::thread thread_;
};

// The loop beside `load` (null: alone); `loop` runs it (in a task for the scheduler modes).
Summary Measure(const std::string& mode, const Workload& w, double seconds, BeLoad* load,
                const std::function<std::vector<int64_t>()>& loop) {
  Clocks().Start();
  const auto t0 = Clock::now();
  std::vector<int64_t> lat = loop();
  const auto t1 = Clock::now();
  Summary s{.mode = mode, .lat = SummarizeLatencies(std::move(lat))};
  s.clocks = Clocks().Stop();
  if (load != nullptr) s.be_per_s = load->Rate(t0, t1);
  return s;
}

// Stops `session` and prints its kernels' calls and device times (and the host time of their
// launch calls); returns their total device time in ms and the number of timed calls.
std::pair<double, int64_t> PrintKernels(ProfileSession& session) {
  const std::vector<TraceRecord> records = OrDie(session.Stop(), "profile");
  double ms = 0;
  int64_t timed = 0;
  for (const KernelStats& k : KernelTable(records)) {
    if (k.timed > 0 && (k.kind == TraceKind::kKernel || k.kind == TraceKind::kLibrary ||
                        k.kind == TraceKind::kHostTask)) {
      ms += k.gpu_total_ms;
      timed += k.timed;
      std::printf("  kernel %-40s calls %6ld  p50 %8.2f us  p99 %8.2f us  host %8.2f us/call\n",
                  k.name.c_str(), static_cast<long>(k.calls), k.gpu_p50_ms * 1e3,
                  k.gpu_p99_ms * 1e3, k.host_total_ms * 1e3 / double(k.calls));
    }
  }
  return {ms, timed};
}

// A stream of the device's most (or least) urgent priority, returned to the pool on exit.
class PooledStream {
 public:
  PooledStream(Device d, bool urgent, int sms = 0) {
    Runtime& rt = Runtime::Get();
    hal::Backend* b = OrDie(rt.backend(d.type), "backend");
    const auto [least, greatest] = b->StreamPriorityRange();
    stream_ = OrDie(rt.AcquireStream(d, urgent ? greatest : least, sms), "stream");
  }
  ~PooledStream() { Runtime::Get().ReleaseStream(stream_); }
  hal::Stream* get() const { return stream_; }

 private:
  hal::Stream* stream_;
};

Summary RunSched(const std::string& mode, const Workload& w, const Args& a,
                 const LoopOptions& loop) {
  SchedulerOptions opt;
  opt.device = w.dev;
  opt.device_set = true;
  const bool preempt = mode == "sched_preempt" || mode == "be_preempt";
  if (mode == "sched_nopart" || preempt) opt.best_effort_sms = 0;
  opt.best_effort_preemption = preempt;
  if (mode == "sched_hold") opt.best_effort_inflight_while_guaranteed = 0;
  std::unique_ptr<Scheduler> s = OrDie(Scheduler::Create(opt), "scheduler");
  TenantOptions online{.name = "online", .qos = QosClass::kGuaranteed};
  online.memory_request = int64_t{1} << 30;
  Check(s->AddTenant(online), "tenant online");
  Check(s->AddTenant(TenantOptions{.name = "batch", .qos = QosClass::kBestEffort}), "tenant batch");
  std::deque<std::shared_ptr<Task>> outstanding;  // the load thread's only
  auto batch = [&]() -> absl::Status {
    while (static_cast<int>(outstanding.size()) < a.outstanding) {
      PGK_ASSIGN_OR_RETURN(std::shared_ptr<Task> t,
                           s->Submit("batch", [&w, &a] { return w.BeMatmuls(a.batch); }));
      outstanding.push_back(std::move(t));
    }
    std::shared_ptr<Task> t = std::move(outstanding.front());
    outstanding.pop_front();
    t->Wait();
    return t->state() == TaskState::kCompleted ? absl::OkStatus() : t->status();
  };
  Summary r;
  {
    std::optional<ProfileSession> session;
    if (mode == "be_preempt") session.emplace();
    std::optional<BeLoad> load;
    if (mode != "sched_idle") load.emplace(batch, a.batch);
    r = Measure(mode, w, a.duration, load ? &*load : nullptr, [&] {
      if (mode == "be_preempt") {
        std::this_thread::sleep_for(std::chrono::duration<double>(a.duration));
        return std::vector<int64_t>{};
      }
      if (a.interval_us > 0) {  // a service: each request a task
        LoopOptions o = loop;
        o.sched = s.get();
        return GLoop(w, o);
      }
      InlineTask task = OrDie(s->Begin("online"), "guaranteed task");
      std::vector<int64_t> lat = GLoop(w, loop);
      Check(task.End(), "guaranteed task end");
      return lat;
    });
    load.reset();  // no more submissions
    for (const std::shared_ptr<Task>& t : outstanding) t->Wait();
    if (session) PrintKernels(*session);
  }
  for (const TenantStats& t : s->stats().tenants) {
    if (t.admission.name == "batch") r.preemptions = t.preemptions;
  }
  Check(s->Shutdown(), "scheduler shutdown");
  return r;
}

Summary RunModeLoop(const std::string& mode, const Workload& w, const Args& a,
                    const LoopOptions& loop) {
  if (mode == "alone" || mode == "alone_end" || mode == "alone_span") {
    return Measure(mode, w, a.duration, nullptr, [&] { return GLoop(w, loop); });
  }
  if (mode == "alone_kernels") {
    int64_t iterations = 0;
    ProfileSession session;
    Summary r = Measure(mode, w, a.duration, nullptr, [&] {
      LoopOptions o = loop;
      o.max_iters = a.kernel_iters;
      std::vector<int64_t> lat = GLoop(w, o);
      iterations = static_cast<int64_t>(lat.size()) + 20;  // the warm-up is in the session too
      return lat;
    });
    const auto [ms, timed] = PrintKernels(session);
    if (timed > 0) r.kernel_us = ms * 1e3 / double(iterations);
    return r;
  }
  if (mode == "alone_rest") {
    const int mp = OrDie(Runtime::Get().properties(w.dev), "properties").multiprocessors;
    const int rest = mp - static_cast<int>(mp * SchedulerOptions::kBestEffortSmShare);
    PooledStream g_stream(w.dev, /*urgent=*/true, rest);
    Summary r = Measure(mode, w, a.duration, nullptr, [&] {
      StreamScope scope(g_stream.get());
      return GLoop(w, loop);
    });
    r.sms = g_stream.get()->sm_count();
    return r;
  }
  if (mode == "be_alone" || mode == "plain_prio") {
    PooledStream be_stream(w.dev, /*urgent=*/false);
    auto batch = [&]() -> absl::Status {
      StreamScope scope(be_stream.get());
      PGK_RETURN_IF_ERROR(w.BeMatmuls(a.batch));
      return Runtime::Get().Synchronize(w.dev);
    };
    BeLoad load(batch, a.batch);
    if (mode == "be_alone") {
      return Measure(mode, w, a.duration, &load, [&] {
        std::this_thread::sleep_for(std::chrono::duration<double>(a.duration));
        return std::vector<int64_t>{};
      });
    }
    PooledStream g_stream(w.dev, /*urgent=*/true);
    return Measure(mode, w, a.duration, &load, [&] {
      StreamScope scope(g_stream.get());
      return GLoop(w, loop);
    });
  }
  return RunSched(mode, w, a, loop);
}

Summary RunMode(const std::string& mode, const Workload& w, const Args& a) {
  std::vector<int64_t> spans;
  std::array<std::vector<int64_t>, 4> phases;
  LoopOptions loop{.seconds = a.duration, .interval_us = a.interval_us, .spin = a.spin};
  if (a.spans || mode == "alone_span") loop.spans = &spans;
  loop.phases = &phases;
  Summary r = RunModeLoop(mode, w, a, loop);
  if (!phases[0].empty()) {
    r.phases_us.emplace();
    for (size_t i = 0; i < phases.size(); ++i) {
      (*r.phases_us)[i] = SummarizeLatencies(std::move(phases[i])).p50;
    }
  }
  if (!spans.empty()) {
    const LatencySummary span = SummarizeLatencies(std::move(spans));
    r.span_p50_us = span.p50;
    r.span_p99_us = span.p99;
  }
  return r;
}

// `s` as a JSON string's contents.
std::string JsonEscaped(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out;
}

// One row of the JSON's "modes" or "runs".
std::string JsonRow(const Summary& r) {
  // Latencies are null where no loop ran (be_alone).
  auto us = [&](double v) { return r.lat.count ? absl::StrFormat("%.2f", v) : "null"; };
  auto opt = [](const std::optional<double>& v) {
    return v ? absl::StrFormat("%.3f", *v) : "null";
  };
  std::string clocks = "null";
  if (r.clocks) {
    clocks = absl::StrFormat(
        "{\"sm_mhz_mean\": %.1f, \"sm_mhz_min\": %d, \"power_w_mean\": %.1f, "
        "\"power_capped_share\": %.3f, \"samples\": %d}",
        r.clocks->sm_mhz_mean, r.clocks->sm_mhz_min, r.clocks->power_w_mean,
        r.clocks->power_capped_share, r.clocks->samples);
  }
  std::string phases = "null";
  if (r.phases_us) {
    phases = "{";
    for (size_t i = 0; i < r.phases_us->size(); ++i) {
      absl::StrAppendFormat(&phases, "%s\"%s\": %.2f", i ? ", " : "", kPhases[i],
                            (*r.phases_us)[i]);
    }
    phases += "}";
  }
  return absl::StrFormat(
      "{\"mode\": \"%s\", \"rep\": %d, \"iterations\": %d, \"p50_us\": %s, \"p99_us\": %s, "
      "\"p99_lo_us\": %s, \"p99_hi_us\": %s, \"mean_us\": %s, \"be_matmuls_per_s\": %s, "
      "\"span_p50_us\": %s, \"span_p99_us\": %s, \"kernel_us\": %s, \"sms\": %s, "
      "\"preemptions\": %s, \"clocks\": %s, \"phases_p50_us\": %s}",
      r.mode, r.rep, r.lat.count, us(r.lat.p50), us(r.lat.p99), opt(r.p99_lo_us), opt(r.p99_hi_us),
      us(r.lat.mean), opt(r.be_per_s), opt(r.span_p50_us), opt(r.span_p99_us), opt(r.kernel_us),
      r.sms ? absl::StrCat(*r.sms) : "null", r.preemptions ? absl::StrCat(*r.preemptions) : "null",
      clocks, phases);
}

// `modes`: one row per mode (with --repeat, the passes' medians); `runs`: every pass.
std::string Json(const Args& a, const hal::DeviceProperties& props,
                 const std::vector<Summary>& modes, const std::vector<Summary>& runs) {
  std::string j = absl::StrFormat(
      "{\n  \"gpu\": \"%s\",\n  \"sm\": \"%d%d\",\n  \"driver\": %d,\n  \"g_size\": %d,\n"
      "  \"be_size\": %d,\n  \"batch\": %d,\n  \"duration_s\": %g,\n  \"interval_us\": %g,\n"
      "  \"wait\": \"%s\",\n  \"repeat\": %d,\n"
      "  \"guaranteed\": \"%d^3 bf16 matmul + 3 elementwise, synchronized per iteration (C++)\",\n"
      "  \"timing\": \"host steady_clock per iteration (launch to synchronize return); "
      "best-effort matmuls completed while the loop ran; with repeat > 1, modes holds each "
      "field's median over the passes (the modes run in turn, pass after pass) and runs every "
      "pass\",\n  \"clocks\": \"%s\",\n  \"modes\": [",
      JsonEscaped(props.name), props.sm_major, props.sm_minor, props.driver_version, a.g_size,
      a.be_size, a.batch, a.duration, a.interval_us, a.spin ? "spin" : "sleep", a.repeat, a.g_size,
      Clocks().available() ? "NVML, sampled every 5 ms while the loop ran"
                           : JsonEscaped(absl::StrCat("not sampled: ", Clocks().why())));
  auto rows = [&](const std::vector<Summary>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      absl::StrAppend(&j, i ? "," : "", "\n    ", JsonRow(v[i]));
  };
  rows(modes);
  j += "\n  ],\n  \"runs\": [";
  rows(a.repeat > 1 ? runs : std::vector<Summary>{});
  j += "\n  ]\n}\n";
  return j;
}

// The median of `v` (the upper one of an even count); v is not empty.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The passes of one mode as one row: each field's median, and the range of p99.
Summary MedianRow(const std::vector<const Summary*>& passes) {
  Summary m = *passes.front();
  m.rep = -1;
  auto med = [&](auto get) {
    std::vector<double> v;
    for (const Summary* p : passes) {
      if (auto x = get(*p)) v.push_back(*x);
    }
    return v.empty() ? std::nullopt : std::optional<double>(Median(std::move(v)));
  };
  using O = std::optional<double>;
  if (m.lat.count > 0) {
    m.lat.p50 = *med([](const Summary& s) { return O(s.lat.p50); });
    m.lat.p99 = *med([](const Summary& s) { return O(s.lat.p99); });
    m.lat.mean = *med([](const Summary& s) { return O(s.lat.mean); });
    m.lat.count = static_cast<int64_t>(*med([](const Summary& s) { return O(s.lat.count); }));
    double lo = m.lat.p99, hi = m.lat.p99;
    for (const Summary* p : passes) {
      lo = std::min(lo, p->lat.p99);
      hi = std::max(hi, p->lat.p99);
    }
    m.p99_lo_us = lo;
    m.p99_hi_us = hi;
  }
  m.be_per_s = med([](const Summary& s) { return s.be_per_s; });
  m.span_p50_us = med([](const Summary& s) { return s.span_p50_us; });
  m.span_p99_us = med([](const Summary& s) { return s.span_p99_us; });
  m.kernel_us = med([](const Summary& s) { return s.kernel_us; });
  for (size_t i = 0; m.phases_us && i < m.phases_us->size(); ++i) {
    (*m.phases_us)[i] =
        *med([&](const Summary& s) { return s.phases_us ? O((*s.phases_us)[i]) : O(); });
  }
  if (m.clocks) {
    auto c = [&](auto field) {
      return *med([&](const Summary& s) { return s.clocks ? O(field(*s.clocks)) : O(); });
    };
    m.clocks->sm_mhz_mean = c([](const ClockSummary& k) { return k.sm_mhz_mean; });
    m.clocks->sm_mhz_min = static_cast<int>(c([](const ClockSummary& k) { return k.sm_mhz_min; }));
    m.clocks->power_w_mean = c([](const ClockSummary& k) { return k.power_w_mean; });
    m.clocks->power_capped_share = c([](const ClockSummary& k) { return k.power_capped_share; });
  }
  return m;
}

void PrintRow(const Summary& r) {
  auto cell = [](bool has, double v) { return has ? absl::StrFormat("%.1f", v) : "-"; };
  std::string phases = "-";
  if (r.phases_us) {
    phases = absl::StrFormat("%.1f/%.1f/%.1f/%.1f", (*r.phases_us)[0], (*r.phases_us)[1],
                             (*r.phases_us)[2], (*r.phases_us)[3]);
  }
  std::printf(
      "%-13s %4s %10s %10s %10ld %12s %12s %10s %5s %8s %8s %7s  %s\n", r.mode.c_str(),
      r.rep < 0 ? "med" : absl::StrCat(r.rep).c_str(), cell(r.lat.count > 0, r.lat.p50).c_str(),
      cell(r.lat.count > 0, r.lat.p99).c_str(), static_cast<long>(r.lat.count),
      cell(r.be_per_s.has_value(), r.be_per_s.value_or(0)).c_str(),
      cell(r.span_p50_us.has_value(), r.span_p50_us.value_or(0)).c_str(),
      cell(r.kernel_us.has_value(), r.kernel_us.value_or(0)).c_str(),
      r.sms ? absl::StrCat(*r.sms).c_str() : "-",
      r.preemptions ? absl::StrCat(*r.preemptions).c_str() : "-",
      cell(r.clocks.has_value(), r.clocks ? r.clocks->sm_mhz_mean : 0).c_str(),
      cell(r.clocks.has_value(), r.clocks ? r.clocks->power_w_mean : 0).c_str(), phases.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = ParseArgs(argc, argv);
  Runtime& rt = Runtime::Get();
  const Device dev = rt.default_device();
  const hal::DeviceProperties props = OrDie(rt.properties(dev), "properties");
  const Workload w(dev, a.g_size, a.be_size);
  std::printf(
      "colocation on %s (%s): guaranteed %ld^3 bf16 + 3 elementwise (%s), best-effort %ld^3 "
      "bf16 x %d per task, %.1f s per mode\n",
      dev.ToString().c_str(), props.name.c_str(), static_cast<long>(a.g_size),
      a.interval_us > 0 ? absl::StrFormat("a request every %g us", a.interval_us).c_str()
                        : "closed loop",
      static_cast<long>(a.be_size), a.batch, a.duration);
  if (!Clocks().available()) std::printf("clocks not sampled: %s\n", Clocks().why().c_str());
  std::printf("%-13s %4s %10s %10s %10s %12s %12s %10s %5s %8s %8s %7s  %s\n", "mode", "pass",
              "p50_us", "p99_us", "iters", "be_mm/s", "span_p50_us", "kernel_us", "sms", "preempt",
              "sm_mhz", "power_w", "host_us begin/launch/sync/end");
  std::vector<Summary> runs;
  for (int rep = 0; rep < a.repeat; ++rep) {
    for (const std::string& mode : a.modes) {
      Summary r = RunMode(mode, w, a);
      r.rep = rep;
      PrintRow(r);
      runs.push_back(std::move(r));
    }
  }
  std::vector<Summary> modes;
  if (a.repeat == 1) {
    modes = runs;
  } else {
    for (const std::string& mode : a.modes) {
      std::vector<const Summary*> passes;
      for (const Summary& r : runs) {
        if (r.mode == mode) passes.push_back(&r);
      }
      modes.push_back(MedianRow(passes));
      PrintRow(modes.back());
    }
  }
  if (!a.out.empty()) {
    const std::string j = Json(a, props, modes, runs);
    FILE* f = std::fopen(a.out.c_str(), "w");
    if (f == nullptr || std::fwrite(j.data(), 1, j.size(), f) != j.size() || std::fclose(f) != 0) {
      Check(absl::UnavailableError(absl::StrCat("cannot write ", a.out)), "output");
    }
  }
  return 0;
}
