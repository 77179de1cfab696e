#include "core/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"

namespace pygpukit::cpu {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kAlignment = 512;  // the memory pool's block alignment

}  // namespace

// The first failure of a host task on any stream of the device until it is reported (a failed
// kernel fails every later wait on the device, as a fault fails a CUDA context; TaskFailure).
struct CpuBackend::Failures {
  void Set(absl::Status s) {
    std::lock_guard<std::mutex> l(mu);
    if (first.ok()) first = std::move(s);
  }
  absl::Status Get(bool take) {
    std::lock_guard<std::mutex> l(mu);
    absl::Status s = first;
    if (take) first = absl::OkStatus();
    return s;
  }
  std::mutex mu;
  absl::Status first;
};

namespace {

class CpuStream final : public hal::Stream {
 public:
  // sms > 0: kernels run on this stream use at most that many threads (a partition).
  CpuStream(int priority, int sms, std::shared_ptr<CpuBackend::Failures> failures)
      : priority_(priority),
        sms_(sms),
        failures_(std::move(failures)),
        worker_([this] { Loop(); }) {}
  ~CpuStream() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // drains queued work first
  }
  Device device() const override { return Device{DeviceType::kCPU, 0}; }
  int priority() const override { return priority_; }
  void* native_handle() const override { return const_cast<CpuStream*>(this); }
  int sm_count() const override { return sms_; }

  void Push(std::function<void()> task, const std::string* name, int64_t held) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push_back({std::move(task), name, held});
      ++unfinished_;
      unfinished_bytes_ += held;
    }
    cv_.notify_all();
  }

  // Queued tasks keep the arrays they use alive: a producer far ahead of the worker would hold
  // memory without bound (500 queued iterations of y = sin(x) + 1 held 1 GB for a 3 MB working
  // set). Kernel launches wait while more than kMaxUnfinished tasks or kMaxUnfinishedBytes of
  // kept memory are unfinished, until half are: deep enough to keep the worker busy, and
  // rarely enough that the producer's wake-ups cost little per task (a bound of 64 tasks
  // doubled the cost of tiny ops on a 2-core machine).
  static constexpr int64_t kMaxUnfinished = 1024;
  static constexpr int64_t kMaxUnfinishedBytes = int64_t{64} << 20;
  bool Crowded() const {
    return unfinished_.load(std::memory_order_relaxed) > kMaxUnfinished ||
           unfinished_bytes_.load(std::memory_order_relaxed) > kMaxUnfinishedBytes;
  }
  void WaitForRoom() {
    if (std::this_thread::get_id() == worker_.get_id()) return;  // a task launching: never wait
    std::unique_lock<std::mutex> l(mu_);
    ++waiters_;
    room_cv_.wait(l, [&] { return Roomy(); });
    --waiters_;
  }

 private:
  struct Work {
    std::function<void()> fn;
    const std::string* name;  // the kernel's (interned by the dispatcher); null: runtime work
    int64_t held;             // bytes it keeps alive
  };

  bool Roomy() const {
    return unfinished_.load() <= kMaxUnfinished / 2 &&
           unfinished_bytes_.load() <= kMaxUnfinishedBytes / 2;
  }

  void Loop() {
    SetThreadCap(sms_);
    for (;;) {
      Work work;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        work = std::move(q_.front());
        q_.pop_front();
      }
      try {
        work.fn();
      } catch (const std::exception& e) {
        Failed(work.name, e.what());
      } catch (...) {
        Failed(work.name, "an exception that is not a std::exception");
      }
      work.fn = nullptr;  // the arrays it kept alive go now, before the counts say so
      unfinished_bytes_.fetch_sub(work.held);
      unfinished_.fetch_sub(1);
      if (waiters_.load() > 0 && Roomy()) {
        std::lock_guard<std::mutex> l(mu_);
        room_cv_.notify_all();
      }
    }
  }

  void Failed(const std::string* name, absl::string_view what) {
    failures_->Set(RuntimeError(absl::StrCat(
        name != nullptr ? absl::StrCat("cpu kernel '", *name, "'") : "cpu stream work",
        " failed: it threw ", what,
        " (its outputs are incomplete; every wait on the cpu device reports this until "
        "gp.synchronize() does)")));
  }

  int priority_;
  int sms_;
  std::shared_ptr<CpuBackend::Failures> failures_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> q_;
  std::atomic<int64_t> unfinished_{0};        // tasks queued or running
  std::atomic<int64_t> unfinished_bytes_{0};  // the memory they keep alive
  std::atomic<int> waiters_{0};               // producers in WaitForRoom
  std::condition_variable room_cv_;           // the counts fell to half their bounds
  bool stop_ = false;
  std::thread worker_;  // last: starts after the members it uses
};

// Generation-counted event: each Record is a new generation, pending until the stream reaches its
// marker. A Wait waits for the generation current at the time of the Wait (CUDA semantics), even if
// the event is recorded again elsewhere and that newer recording completes first. The state is
// shared with the queued markers and waits, because CUDA lets an event be destroyed while work that
// refers to it is pending.
struct EventState {
  uint64_t NextGeneration() {
    std::lock_guard<std::mutex> l(mu);
    pending.insert(++recorded);
    return recorded;
  }
  uint64_t Recorded() {
    std::lock_guard<std::mutex> l(mu);
    return recorded;
  }
  void Complete(uint64_t gen) {
    {
      std::lock_guard<std::mutex> l(mu);
      pending.erase(gen);
      if (gen == recorded) when = Clock::now();
    }
    cv.notify_all();
  }
  void WaitFor(uint64_t gen) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return Done(gen); });
  }
  // Requires mu. Generation 0 (never recorded) is complete.
  bool Done(uint64_t gen) const { return pending.count(gen) == 0; }

  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;
  absl::flat_hash_set<uint64_t> pending;
  Clock::time_point when{};  // completion of the latest recording
};

class CpuEvent final : public hal::Event {
 public:
  Device device() const override { return Device{DeviceType::kCPU, 0}; }
  void* native_handle() const override { return state.get(); }

  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

CpuStream& AsCpu(hal::Stream& s) { return static_cast<CpuStream&>(s); }
CpuEvent& AsCpu(hal::Event& e) { return static_cast<CpuEvent&>(e); }

absl::Status CheckCpu(const Device& d, absl::string_view what) {
  if (!d.is_cpu()) return ValueError(absl::StrCat(what, ": object belongs to ", d.ToString()));
  return absl::OkStatus();
}

std::string CpuModelName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "host CPU";
}

}  // namespace

CpuBackend::CpuBackend() : failures_(std::make_shared<Failures>()) {}
CpuBackend::~CpuBackend() = default;

absl::StatusOr<hal::DeviceProperties> CpuBackend::properties(int device) const {
  if (device != 0) return ValueError(absl::StrCat("cpu: no device ", device));
  hal::DeviceProperties p;
  p.name = CpuModelName();
  p.multiprocessors = NumThreads();  // the threads kernels run on; partitions count these
  p.total_memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  return p;
}

absl::StatusOr<void*> CpuBackend::RawAllocate(int, size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    return MemoryError(absl::StrCat("cpu: out of host memory allocating ", bytes, " bytes"));
  }
  return p;
}

absl::Status CpuBackend::RawFree(int, void* ptr) {
  std::free(ptr);
  return absl::OkStatus();
}

absl::StatusOr<void*> CpuBackend::RawAllocateHost(size_t bytes) { return RawAllocate(0, bytes); }

absl::Status CpuBackend::RawFreeHost(void* ptr) { return RawFree(0, ptr); }

absl::StatusOr<std::pair<size_t, size_t>> CpuBackend::MemoryInfo(int) const {
  size_t page = sysconf(_SC_PAGESIZE);
  return std::pair<size_t, size_t>(sysconf(_SC_AVPHYS_PAGES) * page,
                                   sysconf(_SC_PHYS_PAGES) * page);
}

absl::Status CpuBackend::CheckForeignRange(int, const void* ptr, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  // msync reports ENOMEM when any page of the range is unmapped: an address a producer made up
  // (a wild byte_offset, strides past its allocation) is refused here instead of faulting in a
  // kernel later.
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t start = at & ~(page - 1);
  uintptr_t end = 0;
  if (__builtin_add_overflow(at, bytes, &end) ||
      msync(reinterpret_cast<void*>(start), end - start, MS_ASYNC) != 0) {
    return ValueError(absl::StrCat("foreign memory: ", bytes, " bytes at 0x", absl::Hex(at),
                                   " are not all mapped in this process"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<hal::Stream>> CpuBackend::CreateStream(int device, int priority) {
  return CreatePartitionedStream(device, priority, NumThreads());  // every thread: no partition
}

absl::StatusOr<std::unique_ptr<hal::Stream>> CpuBackend::CreatePartitionedStream(int device,
                                                                                 int priority,
                                                                                 int sms) {
  if (device != 0) return ValueError(absl::StrCat("cpu: no device ", device));
  const int threads = NumThreads();
  if (sms < 1 || sms > threads) {
    return ValueError(absl::StrCat("stream: a partition of ", sms, " SMs is outside [1, ", threads,
                                   "] (the cpu device's worker threads)"));
  }
  auto [least, greatest] = StreamPriorityRange();
  priority = std::clamp(priority, greatest, least);
  return std::unique_ptr<hal::Stream>(new CpuStream(priority, sms == threads ? 0 : sms, failures_));
}

absl::StatusOr<std::unique_ptr<hal::Event>> CpuBackend::CreateEvent(int device, bool) {
  if (device != 0) return ValueError(absl::StrCat("cpu: no device ", device));
  return std::unique_ptr<hal::Event>(new CpuEvent());
}

absl::Status CpuBackend::Enqueue(hal::Stream& stream, std::function<void()> task,
                                 const std::string* name, int64_t held_bytes) {
  PGK_RETURN_IF_ERROR(CheckCpu(stream.device(), "cpu enqueue"));
  AsCpu(stream).Push(std::move(task), name, held_bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::TaskFailure(int, bool take) { return failures_->Get(take); }

bool CpuBackend::Crowded(hal::Stream& stream) const { return AsCpu(stream).Crowded(); }

void CpuBackend::WaitForRoom(hal::Stream& stream) { AsCpu(stream).WaitForRoom(); }

absl::Status CpuBackend::Record(hal::Event& event, hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCpu(event.device(), "event record"));
  // Checked before the generation is taken: a failed record must not leave it pending forever.
  PGK_RETURN_IF_ERROR(CheckCpu(stream.device(), "event record"));
  std::shared_ptr<EventState> e = AsCpu(event).state;
  uint64_t gen = e->NextGeneration();
  return Enqueue(stream, [e, gen] { e->Complete(gen); });
}

absl::Status CpuBackend::Wait(hal::Stream& stream, hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCpu(event.device(), "stream wait"));
  std::shared_ptr<EventState> e = AsCpu(event).state;
  uint64_t gen = e->Recorded();
  if (gen == 0) return absl::OkStatus();
  return Enqueue(stream, [e, gen] { e->WaitFor(gen); });
}

absl::StatusOr<bool> CpuBackend::Query(hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCpu(event.device(), "event query"));
  EventState& e = *AsCpu(event).state;
  std::lock_guard<std::mutex> l(e.mu);
  return e.Done(e.recorded);
}

absl::Status CpuBackend::Synchronize(hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCpu(event.device(), "event synchronize"));
  EventState& e = *AsCpu(event).state;
  e.WaitFor(e.Recorded());
  return absl::OkStatus();
}

absl::Status CpuBackend::Synchronize(hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCpu(stream.device(), "stream synchronize"));
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  PGK_RETURN_IF_ERROR(Enqueue(stream, [done] { done->set_value(); }));
  f.wait();
  return failures_->Get(/*take=*/false);
}

absl::StatusOr<float> CpuBackend::ElapsedMs(hal::Event& start, hal::Event& end) {
  PGK_RETURN_IF_ERROR(CheckCpu(start.device(), "event elapsed time"));
  PGK_RETURN_IF_ERROR(CheckCpu(end.device(), "event elapsed time"));
  EventState& a = *AsCpu(start).state;
  EventState& b = *AsCpu(end).state;
  auto ready = [](const EventState& e) { return e.recorded != 0 && e.Done(e.recorded); };
  const absl::Status not_ready =
      ValueError("event elapsed time: both events must be recorded and completed");
  if (&a == &b) {  // one mutex: std::scoped_lock on it twice would deadlock
    std::lock_guard<std::mutex> l(a.mu);
    if (!ready(a)) return not_ready;
    return 0.0f;
  }
  std::scoped_lock l(a.mu, b.mu);
  if (!ready(a) || !ready(b)) return not_ready;
  return std::chrono::duration<float, std::milli>(b.when - a.when).count();
}

absl::Status CpuBackend::CopyAsync(void* dst, const void* src, size_t bytes, hal::CopyKind,
                                   hal::Stream& stream) {
  if (bytes == 0) return absl::OkStatus();
  return Enqueue(stream, [dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

absl::Status CpuBackend::MemsetAsync(void* dst, uint8_t value, size_t bytes, hal::Stream& stream) {
  if (bytes == 0) return absl::OkStatus();
  return Enqueue(stream, [dst, value, bytes] { std::memset(dst, value, bytes); });
}

absl::Status CpuBackend::WriteWordAsync(uint32_t* dst, uint32_t value, hal::Stream& stream) {
  // Kernels of other queues read the word while it changes: an atomic store, not a plain one.
  return Enqueue(stream, [dst, value] {
    std::atomic_ref<uint32_t>(*dst).store(value, std::memory_order_release);
  });
}

}  // namespace pygpukit::cpu
