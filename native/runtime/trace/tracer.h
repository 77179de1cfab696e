// The tracer: always-on records of what the runtime does (kernel launches, host tasks, library
// calls, allocations and frees, host<->device copies, scheduler task transitions and user
// ranges) in per-thread ring buffers, and, while a profiling session is open, the host span and
// the GPU time of each launch (a pair of events resolved when the session collects).
// An always-on record costs one read of the time-stamp counter and a few stores into the
// thread's own ring (benchmarks/cpp/trace_bench.cc); allocations and frees outside profiling
// sessions skip the clock read (untimed: at collection they are placed at the latest end of
// their thread's records before them, a lower bound that keeps the thread's order). A record
// takes no lock, never synchronizes, allocates only a thread's ring (once) and never throws.
// A failure (an event that cannot be created or recorded) turns GPU timing off and is reported
// once through status().
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/device.h"
#include "core/hal/backend.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PGK_TRACE_TSC 1
#else
#include <chrono>
#define PGK_TRACE_TSC 0
#endif

namespace pygpukit {

/// What a record describes.
enum class TraceKind : uint8_t {
  kKernel,    // a device kernel launch (host span: the launch call)
  kHostTask,  // a CPU-backend kernel queued on a CPU stream
  kLibrary,   // a vendor-library call (cuBLASLt)
  kAlloc,     // a pool allocation (bytes: requested)
  kFree,      // a pool free (bytes: requested)
  kCopy,      // a host<->device copy (host span: the call; bytes: copied)
  kTask,      // a scheduler task's state change (an instant; name: its tenant)
  kRange,     // a user range (TraceRange, gp.profiler.range)
};

/// The kind's name in exports ("kernel", "host_task", "library", "alloc", "free", "copy",
/// "task", "range").
absl::string_view TraceKindName(TraceKind kind);

/// What a launch declares it does, for achieved TFLOP/s and GB/s in profiles (0: not declared).
struct LaunchCost {
  int64_t flops = 0;  // floating-point (or integer) operations
  int64_t bytes = 0;  // device memory read plus written, as the op counts it (no cache effects)
};

/// What a hook records (the hot path: times in Ticks()). Which fields a record keeps depends
/// on its kind (they share the slot's last three words).
struct TraceEntry {
  uint64_t begin = 0;                 // Ticks() at the start of the host call; 0: untimed
                                      // (placed after its thread's records at collection)
  uint64_t end = 0;                   // Ticks() at its end (0: an instant; launches outside
                                      // profiling sessions are instants)
  const std::string* name = nullptr;  // interned (Tracer::Intern or the dispatcher's names)
  uint64_t stream = 0;                // the stream (its hal::Stream's address), as an id
  int64_t bytes = 0;                  // launches: declared; alloc / free: requested; copy
  int64_t flops = 0;                  // launches: declared
  int64_t allocated = -1;             // alloc / free: the pool's allocated and reserved bytes
  int64_t reserved = -1;
  uint64_t task = 0;         // task: its id, and the states it left and entered
  uint8_t from = 0, to = 0;  //   (TaskState values)
  TraceKind kind = TraceKind::kKernel;
  Device device;
};

/// One event of a collected trace.
struct TraceRecord {
  uint64_t seq = 0;      // unique: the thread's id (high bits) and its record count
  int64_t begin_ns = 0;  // host steady clock, ns since the tracer started
  int64_t end_ns = 0;    // end of the host call (== begin_ns for instants)
  const std::string* name = nullptr;
  int64_t bytes = 0;
  int64_t flops = 0;
  int64_t allocated = -1;
  int64_t reserved = -1;
  uint64_t task = 0;
  uint8_t from = 0, to = 0;
  double gpu_ms = -1;  // launches in a profiling session: time on the device, else -1
  uint64_t stream = 0;
  uint32_t thread = 0;  // small id of the recording thread, from 1
  TraceKind kind = TraceKind::kKernel;
  Device device;
};

/// A user range on this thread: an NVTX range (where the build has NVTX; tools such as Nsight
/// Systems see it) and a kRange record from its start to its end. Ranges nest per thread.
void PushTraceRange(absl::string_view name);
/// Ends this thread's innermost range; a RuntimeError when none is open.
absl::Status PopTraceRange();
/// Whether PushTraceRange also makes NVTX ranges (the NVTX headers were present at build time).
bool NvtxAvailable();

/// A scoped PushTraceRange / PopTraceRange.
class TraceRange {
 public:
  explicit TraceRange(absl::string_view name) { PushTraceRange(name); }
  ~TraceRange() { (void)PopTraceRange(); }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};

/// Process-wide; thread-safe. Each thread writes its own ring without locks (a single-writer
/// seqlock: collection copies a ring and keeps what was not overwritten meanwhile).
class Tracer {
 public:
  /// The process's tracer. Out of line on purpose: an inline function-local static would give
  /// modules built with hidden visibility (the Python extension) their own copy.
  static Tracer& Get();

  /// Whether records are taken (default on; PYGPUKIT_TRACE=0 turns it off at start).
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  /// Records each thread's ring holds before the oldest are overwritten (default 65536;
  /// PYGPUKIT_TRACE_CAPACITY; rounded up to a power of two, at most 2^26). Applies to rings made
  /// after the change.
  size_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  void set_capacity(size_t records);

  /// The trace's clock: the CPU's time-stamp counter where there is one (a few cycles to read),
  /// else the steady clock in ns; converted to ns at collection. Inline: it is on every record.
  static uint64_t Ticks() {
#if PGK_TRACE_TSC
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
#endif
  }
  /// The name as a pointer that lives as long as the process (one per distinct name).
  const std::string* Intern(absl::string_view name);
  /// Appends a record to this thread's ring; returns its seq, 0 when tracing is off. Inline:
  /// callers build the entry in registers and nothing is zeroed or copied (a few ns a record).
  uint64_t Add(const TraceEntry& e);
  /// Records a span from `begin` (a Ticks() mark) to now: for hooks off the launch path (copies).
  void AddSpan(TraceKind kind, const std::string* name, Device device, uint64_t stream,
               uint64_t begin, int64_t bytes = 0);

  /// Profiling sessions. While at least one is open, launch records keep their host span (the
  /// always-on records keep only its start: one clock read less per launch), and while one with
  /// `device_timing` is open, launches are timed on the device. End with the same flag.
  void BeginProfiling(bool device_timing = true);
  void EndProfiling(bool device_timing = true);
  bool profiling() const { return sessions_.load(std::memory_order_relaxed) > 0; }
  bool device_timing() const { return timed_sessions_.load(std::memory_order_relaxed) > 0; }
  /// Event pair timing one launch.
  struct Timing {
    hal::Backend* backend = nullptr;
    int device = 0;
    std::unique_ptr<hal::Event> start, end;
  };
  /// Records the start event of a timed launch on `stream`; null if not profiling (or failed).
  std::unique_ptr<Timing> StartTiming(hal::Backend& backend, hal::Stream& stream);
  /// Records the end event and files the pair under the launch's record `seq`.
  void EndTiming(std::unique_ptr<Timing> timing, hal::Stream& stream, uint64_t seq);

  /// Every record still held that began at or after `since` (a Ticks() mark), in time order
  /// (ties by seq), with GPU times resolved (this waits for the timed launches to finish: call
  /// it off the hot path). An untimed record takes the latest end of its thread's records before
  /// it: one made after the mark with no timed record of its thread between is left out, and so
  /// is one with no earlier record still held (sessions time every record).
  std::vector<TraceRecord> Collect(uint64_t since);
  /// Records lost to ring wrap-around since the process started.
  int64_t dropped() const;
  /// OK, or the failure that turned GPU timing off.
  absl::Status status() const;

 private:
  // A thread's records: kWords 64-bit words per slot, written by the owner only (relaxed atomic
  // stores through atomic_ref, so a concurrent collection is no data race). The owner announces
  // a record in `begun` before writing its slot and publishes it in `written` after; a reader
  // copies the published slots, then keeps those that `begun` says were not overwritten.
  struct alignas(128) Ring {
    // begin, end, name, stream, kind|device, then by kind: bytes, flops | allocated, reserved;
    // for tasks: id, from|to.
    static constexpr size_t kWords = 8;
    explicit Ring(size_t cap);
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;
    const size_t capacity;  // a power of two
    uint64_t* const words;  // pages are touched only as the ring fills; null if it failed
    std::atomic<uint64_t> begun{0}, written{0};
    uint32_t thread = 0;
    std::atomic<bool> dead{false};
  };
  Tracer();
  Ring* ThisThread();  // null while the thread exits
  // ThisThread()'s ring once made: the record's path. General-dynamic TLS (a __tls_get_addr
  // call): initial-exec needs static TLS that a library Python dlopens cannot count on, and TLS
  // descriptors (-mtls-dialect=gnu2) broke records of other threads under dlopen on the GPU host.
  static thread_local Ring* this_thread_;
  void Fail(const absl::Status& s);
  void Recycle(std::unique_ptr<Timing> t);
  int64_t ToNs(uint64_t ticks, uint64_t now_ticks, int64_t now_ns) const;

  std::atomic<bool> enabled_{true};
  std::atomic<size_t> capacity_{65536};
  std::atomic<int> sessions_{0}, timed_sessions_{0};
  std::atomic<bool> timing_failed_{false};
  std::atomic<uint32_t> next_thread_{1};
  uint64_t tick0_ = 0;  // calibration: Ticks() and steady ns at the start, and the ratio
  int64_t ns0_ = 0;     // measured over a short wait then (used until a longer span exists)
  double ns_per_tick0_ = 1;

  mutable std::mutex mu_;                     // rings_, names_, pending_, spare_, status_
  std::vector<std::shared_ptr<Ring>> rings_;  // shared: a ring outlives its thread
  std::deque<std::string> names_;             // interned names (stable addresses)
  absl::flat_hash_map<absl::string_view, const std::string*> name_index_;
  struct Pending {
    uint64_t seq;
    std::unique_ptr<Timing> timing;
  };
  std::vector<Pending> pending_;
  absl::flat_hash_map<uint64_t, double> resolved_;  // device times, while sessions are open
  std::vector<std::unique_ptr<Timing>> spare_;
  absl::Status status_;
};

inline uint64_t Tracer::Add(const TraceEntry& e) {
  if (!enabled()) return 0;
  Ring* r = this_thread_;
  if (r == nullptr) [[unlikely]] {
    r = ThisThread();
    if (r == nullptr || r->words == nullptr) return 0;
  }
  const auto put = [](uint64_t* w, uint64_t v) {
    std::atomic_ref<uint64_t>(*w).store(v, std::memory_order_relaxed);
  };
  const uint64_t n = r->written.load(std::memory_order_relaxed);  // only this thread writes
  r->begun.store(n + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t* w = r->words + (n & (r->capacity - 1)) * Ring::kWords;
  put(w + 0, e.begin);
  put(w + 1, e.end < e.begin ? e.begin : e.end);
  put(w + 2, reinterpret_cast<uintptr_t>(e.name));
  put(w + 3, e.stream);
  put(w + 4, uint64_t{static_cast<uint8_t>(e.kind)} |
                 uint64_t{static_cast<uint8_t>(e.device.type)} << 8 |
                 uint64_t{static_cast<uint16_t>(e.device.index)} << 16);
  const bool memory = e.kind == TraceKind::kAlloc || e.kind == TraceKind::kFree;
  if (e.kind == TraceKind::kTask) {
    put(w + 5, e.task);
    put(w + 6, uint64_t{e.from} | uint64_t{e.to} << 8);
    put(w + 7, 0);  // every word written: a collection never reads stale memory
  } else {
    put(w + 5, static_cast<uint64_t>(e.bytes));
    put(w + 6, static_cast<uint64_t>(memory ? e.allocated : e.flops));
    put(w + 7, static_cast<uint64_t>(memory ? e.reserved : -1));
  }
  r->written.store(n + 1, std::memory_order_release);
  // The next slot's line, for writing, now: the ring is larger than the caches, and a store that
  // misses to memory at the next record would hold up every store behind it (they commit in
  // order), where the prefetch overlaps the miss with the work until then.
  __builtin_prefetch(r->words + ((n + 1) & (r->capacity - 1)) * Ring::kWords, 1, 3);
  return (uint64_t{r->thread} << 40) | (n + 1);
}

}  // namespace pygpukit
