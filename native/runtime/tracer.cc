#include "runtime/tracer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pygpukit {

namespace {
// Rings of threads that have exited are kept for collection; past this many the oldest go.
constexpr size_t kMaxDeadRings = 32;
// Launches waiting for their GPU time; past this, the oldest are queried (without waiting) as
// new ones come, and launches are not timed while this many are still unfinished.
constexpr size_t kMaxPending = 1 << 16;
}  // namespace

struct Tracer::Ring {
  std::mutex mu;
  std::vector<TraceRecord> slots;  // grows to `capacity`, then wraps
  size_t capacity = 0;
  uint64_t written = 0;  // records ever written
  uint32_t thread = 0;
  std::atomic<bool> dead{false};
};

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
    if (v > 0) capacity_ = static_cast<size_t>(v);
  }
}

int64_t Tracer::NowNs() {
  static const auto epoch = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              epoch)
      .count();
}

void Tracer::set_capacity(size_t records) { capacity_ = std::max<size_t>(records, 1); }

const std::string* Tracer::Intern(absl::string_view name) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = name_index_.find(name); it != name_index_.end()) return it->second;
  const std::string* s = &names_.emplace_back(name);
  name_index_.emplace(*s, s);
  return s;
}

Tracer::Ring& Tracer::ThisThread() {
  // The holder marks the ring dead when its thread exits; the tracer keeps it for collection.
  struct Holder {
    std::shared_ptr<Ring> ring;
    ~Holder() {
      if (ring) ring->dead = true;
    }
  };
  thread_local Holder holder;
  if (holder.ring == nullptr) {
    auto ring = std::make_shared<Ring>();
    ring->capacity = capacity();
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
  return *holder.ring;
}

uint64_t Tracer::Add(TraceRecord r) {
  if (!enabled()) return 0;
  Ring& ring = ThisThread();
  r.thread = ring.thread;
  if (r.begin_ns == 0) r.begin_ns = NowNs();
  if (r.end_ns < r.begin_ns) r.end_ns = r.begin_ns;
  std::lock_guard<std::mutex> l(ring.mu);
  r.seq = (uint64_t{ring.thread} << 40) | (ring.written + 1);
  if (ring.slots.size() < ring.capacity) {
    ring.slots.push_back(r);
  } else {
    ring.slots[ring.written % ring.capacity] = r;
  }
  ++ring.written;
  return r.seq;
}

void Tracer::BeginProfiling() { profiling_.fetch_add(1); }

void Tracer::EndProfiling() {
  if (profiling_.fetch_sub(1) <= 0) profiling_.fetch_add(1);  // unbalanced: stay at zero
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
  if (!profiling() || timing_failed_.load(std::memory_order_relaxed)) return nullptr;
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

std::vector<TraceRecord> Tracer::Collect(int64_t since_ns) {
  std::vector<Pending> pending;
  std::vector<std::shared_ptr<Ring>> rings;
  {
    std::lock_guard<std::mutex> l(mu_);
    pending.swap(pending_);
    rings = rings_;
  }
  // GPU times of the timed launches (waits for each to finish; outside every lock).
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
  std::vector<TraceRecord> out;
  for (const auto& ring : rings) {
    std::lock_guard<std::mutex> l(ring->mu);
    for (const TraceRecord& r : ring->slots) {
      if (r.begin_ns < since_ns) continue;
      out.push_back(r);
      if (auto it = gpu_ms.find(r.seq); it != gpu_ms.end()) out.back().gpu_ms = it->second;
    }
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
    std::lock_guard<std::mutex> rl(ring->mu);
    if (ring->written > ring->capacity) n += static_cast<int64_t>(ring->written - ring->capacity);
  }
  return n;
}

}  // namespace pygpukit
