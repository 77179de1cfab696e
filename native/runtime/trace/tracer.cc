#include "runtime/trace/tracer.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define PGK_TRACE_NVTX 1
#else
#define PGK_TRACE_NVTX 0
#endif

namespace pygpukit {

namespace {
// Rings of threads that have exited are kept for collection; past this many the oldest go.
constexpr size_t kMaxDeadRings = 32;
// Launches waiting for their GPU time; launches are not timed while this many wait.
constexpr size_t kMaxPending = 1 << 16;
// Records per ring at most (64 bytes each: 4 GiB), so that the ring's size cannot overflow.
constexpr size_t kMaxCapacity = size_t{1} << 26;

inline uint64_t Take(uint64_t* w) {
  return std::atomic_ref<uint64_t>(*w).load(std::memory_order_relaxed);
}
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Tracer::Ring::Ring(size_t cap)
    // Slots on cache-line boundaries: a record dirties one line, not two (malloc's 16-byte
    // alignment split every slot). Unzeroed: only published slots are read.
    : capacity(cap),
      words(static_cast<uint64_t*>(std::aligned_alloc(kWords * 8, cap * kWords * 8))) {}
Tracer::Ring::~Ring() { std::free(words); }

absl::string_view TraceKindName(TraceKind kind) {
  switch (kind) {
    case TraceKind::kKernel:
      return "kernel";
    case TraceKind::kHostTask:
      return "host_task";
    case TraceKind::kLibrary:
      return "library";
    case TraceKind::kAlloc:
      return "alloc";
    case TraceKind::kFree:
      return "free";
    case TraceKind::kCopy:
      return "copy";
    case TraceKind::kTask:
      return "task";
    case TraceKind::kRange:
      return "range";
  }
  return "unknown";
}

Tracer& Tracer::Get() {
  static auto* tracer = new Tracer;  // never destroyed: threads record until process exit
  return *tracer;
}

Tracer::Tracer() {
  if (const char* e = std::getenv("PYGPUKIT_TRACE")) enabled_ = std::string(e) != "0";
  if (const char* c = std::getenv("PYGPUKIT_TRACE_CAPACITY")) {
    const long long v = std::atoll(c);
    if (v > 0) set_capacity(static_cast<size_t>(v));
  }
  tick0_ = Ticks();
  ns0_ = SteadyNs();
#if PGK_TRACE_TSC
  // The counter's rate over 2 ms, until collections have a longer span since the start.
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t t1 = Ticks();
  const int64_t n1 = SteadyNs();
  if (t1 > tick0_) {
    ns_per_tick0_ = static_cast<double>(n1 - ns0_) / static_cast<double>(t1 - tick0_);
  }
#endif
}

int64_t Tracer::ToNs(uint64_t ticks, uint64_t now_ticks, int64_t now_ns) const {
  double rate = ns_per_tick0_;
  if (now_ns - ns0_ > 200'000'000 && now_ticks > tick0_) {  // a long span: the better rate
    rate = static_cast<double>(now_ns - ns0_) / static_cast<double>(now_ticks - tick0_);
  }
  return static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(ticks - tick0_)) * rate);
}

void Tracer::set_capacity(size_t records) {
  // A power of two: a record's slot is its index masked, not divided (a 64-bit division costs
  // tens of cycles on the hot path).
  capacity_ = std::bit_ceil(std::clamp<size_t>(records, 1, kMaxCapacity));
}

const std::string* Tracer::Intern(absl::string_view name) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = name_index_.find(name); it != name_index_.end()) return it->second;
  const std::string* s = &names_.emplace_back(name);
  name_index_.emplace(*s, s);
  return s;
}

// A plain pointer for the per-record access (no TLS guard or destructor wrapper); the holder
// keeps the ring and marks it dead when its thread exits (the tracer keeps it for collection).
thread_local Tracer::Ring* Tracer::this_thread_ = nullptr;

Tracer::Ring* Tracer::ThisThread() {
  Ring*& fast = this_thread_;
  thread_local bool exiting = false;  // trivial: safe to read in later TLS destructors
  struct Holder {
    std::shared_ptr<Ring> ring;
    ~Holder() {
      this_thread_ = nullptr;
      exiting = true;  // records made after this (other TLS destructors) are dropped
      if (ring) ring->dead = true;
    }
  };
  if (fast != nullptr) return fast;
  if (exiting) return nullptr;
  thread_local Holder holder;
  if (holder.ring == nullptr) {
    auto ring = std::make_shared<Ring>(capacity());
    ring->thread = next_thread_.fetch_add(1);
    std::lock_guard<std::mutex> l(mu_);
    size_t dead = 0;
    for (const auto& r : rings_) dead += r->dead ? 1 : 0;
    for (auto it = rings_.begin(); dead > kMaxDeadRings && it != rings_.end();) {
      if ((*it)->dead) {
        it = rings_.erase(it);
        --dead;
      } else {
        ++it;
      }
    }
    rings_.push_back(ring);
    holder.ring = std::move(ring);
  }
  // A ring without memory (its allocation failed) is not cached: its thread's records are dropped.
  if (holder.ring->words != nullptr) fast = holder.ring.get();
  return holder.ring.get();
}

void Tracer::AddSpan(TraceKind kind, const std::string* name, Device device, uint64_t stream,
                     uint64_t begin, int64_t bytes) {
  if (!enabled()) return;
  TraceEntry e;
  e.kind = kind;
  e.name = name;
  e.device = device;
  e.stream = stream;
  e.begin = begin;
  e.end = Ticks();
  e.bytes = bytes;
  Add(e);
}

namespace {
struct OpenRange {
  const std::string* name;
  uint64_t begin;
};
thread_local std::vector<OpenRange> open_ranges;
}  // namespace

void PushTraceRange(absl::string_view name) {
#if PGK_TRACE_NVTX
  const std::string n(name);
  nvtxRangePushA(n.c_str());
#endif
  Tracer& t = Tracer::Get();
  open_ranges.push_back(OpenRange{t.Intern(name), Tracer::Ticks()});
}

absl::Status PopTraceRange() {
  if (open_ranges.empty()) {
    return RuntimeError("trace range: pop without an open range on this thread");
  }
#if PGK_TRACE_NVTX
  nvtxRangePop();
#endif
  const OpenRange r = open_ranges.back();
  open_ranges.pop_back();
  Tracer::Get().AddSpan(TraceKind::kRange, r.name, Device{}, 0, r.begin);
  return absl::OkStatus();
}

bool NvtxAvailable() { return PGK_TRACE_NVTX != 0; }

void Tracer::BeginProfiling(bool device_timing) {
  sessions_.fetch_add(1);
  if (device_timing) timed_sessions_.fetch_add(1);
}

void Tracer::EndProfiling(bool device_timing) {
  // Unbalanced calls leave the counts at zero.
  int n = sessions_.load();
  while (n > 0 && !sessions_.compare_exchange_weak(n, n - 1)) {
  }
  if (!device_timing) return;
  n = timed_sessions_.load();
  while (n > 0 && !timed_sessions_.compare_exchange_weak(n, n - 1)) {
  }
  if (n == 1) {  // the last timed session has collected: its device times are not needed
    std::lock_guard<std::mutex> l(mu_);
    // Unless a session began meanwhile (its Collect may have filed times here already).
    if (timed_sessions_.load() == 0) resolved_.clear();
  }
}

void Tracer::Fail(const absl::Status& s) {
  timing_failed_ = true;
  std::lock_guard<std::mutex> l(mu_);
  if (status_.ok()) {
    status_ = absl::Status(s.code(), absl::StrCat("tracer: GPU timing is off: ", s.message()));
  }
}

absl::Status Tracer::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

std::unique_ptr<Tracer::Timing> Tracer::StartTiming(hal::Backend& backend, hal::Stream& stream) {
  if (!device_timing() || timing_failed_.load(std::memory_order_relaxed)) return nullptr;
  const int device = stream.device().index;
  std::unique_ptr<Timing> t;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (pending_.size() >= kMaxPending) return nullptr;
    for (size_t i = spare_.size(); i-- > 0;) {
      if (spare_[i]->backend == &backend && spare_[i]->device == device) {
        t = std::move(spare_[i]);
        spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  if (t == nullptr) {
    t = std::make_unique<Timing>();
    t->backend = &backend;
    t->device = device;
    auto start = backend.CreateEvent(device, true);
    auto end = backend.CreateEvent(device, true);
    if (!start.ok() || !end.ok()) {
      Fail(start.ok() ? end.status() : start.status());
      return nullptr;
    }
    t->start = *std::move(start);
    t->end = *std::move(end);
  }
  if (absl::Status s = backend.Record(*t->start, stream); !s.ok()) {
    Fail(s);
    return nullptr;
  }
  return t;
}

void Tracer::EndTiming(std::unique_ptr<Timing> timing, hal::Stream& stream, uint64_t seq) {
  if (timing == nullptr) return;
  if (absl::Status s = timing->backend->Record(*timing->end, stream); !s.ok()) {
    Fail(s);
    return;
  }
  if (seq == 0) return Recycle(std::move(timing));  // tracing went off meanwhile
  std::lock_guard<std::mutex> l(mu_);
  pending_.push_back(Pending{seq, std::move(timing)});
}

void Tracer::Recycle(std::unique_ptr<Timing> t) {
  std::lock_guard<std::mutex> l(mu_);
  if (spare_.size() < 256) spare_.push_back(std::move(t));
}

std::vector<TraceRecord> Tracer::Collect(uint64_t since) {
  std::vector<Pending> pending;
  std::vector<std::shared_ptr<Ring>> rings;
  {
    std::lock_guard<std::mutex> l(mu_);
    pending.swap(pending_);
    rings = rings_;
  }
  // GPU times of the timed launches (waits for each to finish; outside every lock). They are
  // kept for every session until none is open: sessions may overlap.
  absl::flat_hash_map<uint64_t, double> gpu_ms;
  for (Pending& p : pending) {
    Timing& t = *p.timing;
    absl::Status s = t.backend->Synchronize(*t.end);
    absl::StatusOr<float> ms = s.ok() ? t.backend->ElapsedMs(*t.start, *t.end) : s;
    if (ms.ok()) {
      gpu_ms[p.seq] = *ms;
    } else {
      Fail(ms.status());
    }
    Recycle(std::move(p.timing));
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    resolved_.insert(gpu_ms.begin(), gpu_ms.end());
    gpu_ms = resolved_;
  }
  const uint64_t now_ticks = Ticks();
  const int64_t now_ns = SteadyNs();
  std::vector<TraceRecord> out;
  struct Copied {
    uint64_t index, begin, end;  // raw ticks: untimed records are placed after the copy
    TraceRecord r;
  };
  std::vector<Copied> copied;
  for (const auto& ring : rings) {
    if (ring->words == nullptr) continue;
    const size_t cap = ring->capacity;
    const uint64_t w1 = ring->written.load(std::memory_order_acquire);
    copied.clear();
    for (uint64_t i = w1 > cap ? w1 - cap : 0; i < w1; ++i) {
      uint64_t* w = ring->words + (i % cap) * Ring::kWords;
      Copied c{i, Take(w + 0), Take(w + 1), {}};
      TraceRecord& r = c.r;
      r.seq = (uint64_t{ring->thread} << 40) | (i + 1);
      r.name = reinterpret_cast<const std::string*>(static_cast<uintptr_t>(Take(w + 2)));
      r.stream = Take(w + 3);
      const uint64_t packed = Take(w + 4);
      r.kind = static_cast<TraceKind>(packed & 0xff);
      r.device.type = static_cast<DeviceType>((packed >> 8) & 0xff);
      r.device.index = static_cast<int16_t>((packed >> 16) & 0xffff);
      if (r.kind == TraceKind::kTask) {
        r.task = Take(w + 5);
        const uint64_t states = Take(w + 6);
        r.from = static_cast<uint8_t>(states & 0xff);
        r.to = static_cast<uint8_t>((states >> 8) & 0xff);
      } else if (r.kind == TraceKind::kAlloc || r.kind == TraceKind::kFree) {
        r.bytes = static_cast<int64_t>(Take(w + 5));
        r.allocated = static_cast<int64_t>(Take(w + 6));
        r.reserved = static_cast<int64_t>(Take(w + 7));
      } else {
        r.bytes = static_cast<int64_t>(Take(w + 5));
        r.flops = static_cast<int64_t>(Take(w + 6));
      }
      r.thread = ring->thread;
      copied.push_back(c);
    }
    // What the owner overwrote while this copy ran goes (slots before keep_from may hold newer
    // records by now), before any record lends its time to an untimed one.
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t b2 = ring->begun.load(std::memory_order_relaxed);
    const uint64_t keep_from = b2 > cap ? b2 - cap : 0;
    // An untimed record is placed at the latest end among the kept records of its thread before
    // it: a lower bound that keeps it after every span closed before it was made (a range's
    // record is added at its end but begins at its start). With none kept before it, it has no
    // bound and is left out.
    uint64_t bound = 0;
    for (Copied& c : copied) {
      if (c.index < keep_from) continue;
      if (c.begin == 0) {
        if (bound == 0) continue;
        c.begin = c.end = bound;
      } else {
        bound = std::max({bound, c.begin, c.end});
      }
      if (c.begin < since) continue;
      c.r.begin_ns = ToNs(c.begin, now_ticks, now_ns);
      c.r.end_ns = ToNs(c.end, now_ticks, now_ns);
      out.push_back(c.r);
    }
  }
  for (TraceRecord& r : out) {
    if (auto it = gpu_ms.find(r.seq); it != gpu_ms.end()) r.gpu_ms = it->second;
  }
  std::sort(out.begin(), out.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.seq < b.seq;
  });
  return out;
}

int64_t Tracer::dropped() const {
  std::lock_guard<std::mutex> l(mu_);
  int64_t n = 0;
  for (const auto& ring : rings_) {
    const uint64_t w = ring->written.load(std::memory_order_relaxed);
    if (w > ring->capacity) n += static_cast<int64_t>(w - ring->capacity);
  }
  return n;
}

}  // namespace pygpukit
