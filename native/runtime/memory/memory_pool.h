// The device memory pool: every device allocation in the library (arrays, temporaries, library
// workspaces) comes from here. A stream-ordered caching allocator with size-class bins, best-fit
// splitting and coalescing, LRU release of cached segments under pressure, a process limit,
// per-tenant quotas, and spill of evictable live buffers to pinned host memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/device.h"
#include "core/hal/backend.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {

class MemoryPool;
class TransferEngine;
struct PoolBlock;

/// Only the pool constructs buffers.
class BufferKey {
  friend class MemoryPool;
  friend class Buffer;
  BufferKey() = default;
};

/// Which evictable buffers a spill under pressure takes: those of kFirst quotas (best-effort
/// tenants) before the rest, never those of kNever quotas (guaranteed tenants).
enum class SpillOrder { kFirst, kNormal, kNever };

/// A tenant's memory quota: the device bytes of live buffers allocated under it (through a
/// QuotaScope) may not exceed `limit`. Thread-safe; shared by the buffers charged to it.
class MemoryQuota {
 public:
  MemoryQuota(std::string name, int64_t limit_bytes)
      : name_(std::move(name)), limit_(limit_bytes) {}
  const std::string& name() const { return name_; }
  int64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  void set_limit(int64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  /// Bytes (requests rounded to 512) of live, resident buffers charged to this quota.
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  SpillOrder spill_order() const { return spill_order_.load(std::memory_order_relaxed); }
  void set_spill_order(SpillOrder o) { spill_order_.store(o, std::memory_order_relaxed); }

 private:
  friend class MemoryPool;
  friend class QuotaChain;
  bool TryCharge(int64_t bytes);  // false (and no change) when the limit would be exceeded
  void Uncharge(int64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  std::string name_;
  std::atomic<int64_t> limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<SpillOrder> spill_order_{SpillOrder::kNormal};
};

/// The quotas an allocation is charged to: a scope's quota and those of the scopes around it,
/// innermost first, each once. Immutable; shared by the thread's scopes and by the buffers
/// charged to it.
class QuotaChain {
 public:
  QuotaChain(std::shared_ptr<MemoryQuota> quota, std::shared_ptr<const QuotaChain> outer)
      : quota_(std::move(quota)), outer_(std::move(outer)) {}
  const std::shared_ptr<MemoryQuota>& quota() const { return quota_; }
  const QuotaChain* outer() const { return outer_.get(); }
  bool Contains(const MemoryQuota* q) const;
  /// kNever when any quota of the chain says never (a guaranteed tenant's buffers stay put
  /// whatever scope they were made in), else kFirst when any says first, else kNormal.
  SpillOrder spill_order() const;
  /// Charges `bytes` to every quota; on failure nothing stays charged and the quota that
  /// refused is returned (null on success).
  MemoryQuota* TryCharge(int64_t bytes) const;
  void Uncharge(int64_t bytes) const;

 private:
  std::shared_ptr<MemoryQuota> quota_;
  std::shared_ptr<const QuotaChain> outer_;
};

/// While alive, device allocations made by this thread are charged to `quota` and to the quotas
/// of the scopes around it (a tenant's task cannot escape its limit through a scope of its own);
/// a null quota opens an uncharged scope (runtime state, workspaces). The scheduler opens one
/// around each task. Scopes end in reverse order of opening.
class QuotaScope {
 public:
  explicit QuotaScope(std::shared_ptr<MemoryQuota> quota);
  ~QuotaScope();
  QuotaScope(const QuotaScope&) = delete;
  QuotaScope& operator=(const QuotaScope&) = delete;
  /// The innermost quota allocations on this thread are charged to, or null.
  static const std::shared_ptr<MemoryQuota>& Current();
  /// Every quota they are charged to, or null.
  static const std::shared_ptr<const QuotaChain>& CurrentChain();

 private:
  std::shared_ptr<const QuotaChain> previous_;
};

/// A block of device memory owned by an array (or a temporary). Destroying the last reference
/// returns it to the pool, reusable at once on its stream and on other streams once the work
/// queued before the free has finished. An evictable buffer may be spilled to pinned host memory
/// under pressure; its device address is valid only while a ResidencyPin holds it.
class Buffer : public std::enable_shared_from_this<Buffer> {
 public:
  Buffer(BufferKey, MemoryPool* pool, Device device, size_t requested, hal::Stream* stream)
      : pool_(pool), device_(device), requested_(requested), stream_(stream) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device device() const { return device_; }
  /// Device address (host address on the CPU backend). Valid while resident: always for
  /// buffers that are not evictable, under a ResidencyPin for those that are.
  void* data() const { return ptr_; }
  /// Bytes usable (the request rounded up to the pool's granularity).
  size_t size() const { return size_; }
  /// Bytes asked for.
  size_t requested() const { return requested_; }
  /// Stream the buffer was allocated on; its memory returns to that stream's cache.
  hal::Stream* stream() const { return stream_; }
  bool evictable() const { return evictable_.load(std::memory_order_acquire); }
  /// False while the contents live in pinned host memory.
  bool resident() const;
  /// The pool the memory came from; null for foreign buffers.
  MemoryPool* pool() const { return pool_; }

  /// Called once when a foreign buffer dies, with the streams work on it was queued on (its own
  /// first, then those recorded): the importer fences them before giving the memory back.
  using ForeignRelease = std::function<void(std::vector<hal::Stream*> used)>;
  /// Memory this library does not own (imported through DLPack or the CUDA array interface):
  /// `bytes` at `ptr` on `device`, used on `stream` unless recorded otherwise. It never comes
  /// from or returns to a pool, is never evictable and is not counted in pool statistics.
  static std::shared_ptr<Buffer> Foreign(Device device, void* ptr, size_t bytes,
                                         hal::Stream* stream, ForeignRelease release);
  /// Whether the memory is foreign (see Foreign).
  bool foreign() const { return pool_ == nullptr; }
  /// Notes that work on `stream` uses the buffer, so that its memory is not reused (pool
  /// buffers: MemoryPool::RecordStream) or released (foreign buffers) before that work is done.
  absl::Status RecordStream(hal::Stream& stream);
  /// The streams work on the buffer may have been queued on: its own first, then those recorded
  /// with RecordStream. A host read waits for all of them (the last writer is among them).
  std::vector<hal::Stream*> UsedOn() const;

 private:
  friend class MemoryPool;
  friend class ResidencyPin;

  MemoryPool* pool_;
  Device device_;
  size_t requested_;
  size_t size_ = 0;
  hal::Stream* stream_;
  void* ptr_ = nullptr;
  // Owned by the pool and guarded by its mutex.
  PoolBlock* block_ = nullptr;                // null while spilled
  void* host_copy_ = nullptr;                 // pinned copy while spilled
  std::shared_ptr<const QuotaChain> quotas_;  // charged for the device bytes, if any
  std::atomic<bool> evictable_{false};
  // Pins are counted for every buffer (lock-free for buffers that are not evictable). A spill
  // sets `moving_` under the lock and then requires no pins; with both sides seq_cst, a pin
  // racing with SetEvictable(true) + Evict either is seen by the spill or sees `evictable_`.
  std::atomic<int> pins_{0};
  bool moving_ = false;  // a spill or page-in is in flight
  uint64_t last_use_ = 0;
  Buffer* lru_prev_ = nullptr;  // evictable buffers, least recently used first
  Buffer* lru_next_ = nullptr;
  bool in_lru_ = false;
  // Foreign buffers only.
  ForeignRelease release_;
  mutable std::mutex foreign_mu_;
  std::vector<hal::Stream*> foreign_uses_;  // recorded streams other than stream_
};

/// Holds buffers resident (paging spilled ones back in) until destroyed. Ops take one over
/// their operands before reading any device address and keep it until the work is enqueued:
/// later spills are stream-ordered after that work.
class ResidencyPin {
 public:
  ResidencyPin() = default;
  ResidencyPin(ResidencyPin&& other) : pinned_(std::move(other.pinned_)) {
    other.pinned_.clear();  // a moved-from InlinedVector keeps its size
  }
  ResidencyPin& operator=(ResidencyPin&& other);
  ~ResidencyPin();
  /// Pins `buffer` (without taking the pool's lock when it is not evictable); also holds it
  /// alive. Foreign buffers never move: they are only held.
  absl::Status Add(const std::shared_ptr<Buffer>& buffer);
  /// Keeps a resident buffer where it is for the rest of its life (its address was handed to
  /// another library without a way to hear when it stops using it).
  static void PinForLife(Buffer& buffer);

 private:
  absl::InlinedVector<std::shared_ptr<Buffer>, 4> pinned_;
};

/// Counters of one pool. Byte figures are device bytes.
struct MemoryStats {
  int64_t allocated_bytes = 0;  // blocks held by live buffers (rounded sizes)
  int64_t requested_bytes = 0;  // what those buffers asked for
  int64_t reserved_bytes = 0;   // segments obtained from the driver
  int64_t cached_bytes = 0;     // reserved - allocated
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t active_blocks = 0;
  int64_t segments = 0;
  int64_t largest_free_block = 0;
  int64_t limit_bytes = 0;  // 0: no process limit
  int64_t num_allocations = 0;
  int64_t num_cache_hits = 0;
  int64_t num_driver_allocations = 0;
  int64_t num_driver_frees = 0;
  int64_t num_evictions = 0;  // cached segments released to the driver under pressure
  int64_t num_spills = 0;     // live buffers copied out to pinned host memory
  int64_t num_page_ins = 0;   // spilled buffers brought back
  int64_t spilled_bytes = 0;  // bytes currently held in host memory for spilled buffers
  int64_t evictable_buffers = 0;
};

/// How the pool trades speed for memory.
enum class PoolPolicy {
  /// Like PyTorch's caching allocator: large requests split any cached block that holds them
  /// and mid-sized ones share 20 MiB segments, so the driver is rarely called; cached memory is
  /// released only under pressure.
  kFast,
  /// Keeps reserved memory close to what is in use: large requests take only a cached block
  /// within `compact_fit_slack` of their size, else an exact segment, and idle cached segments
  /// are released before the pool grows. More driver calls (each release waits for the stream).
  kCompact,
};

/// Tunables of a pool (defaults suit GPUs; tests shrink them).
struct PoolOptions {
  size_t small_max = size_t{1} << 20;          // requests up to this come from small segments
  size_t small_segment = size_t{2} << 20;      // size of a small segment
  size_t large_granularity = size_t{2} << 20;  // large segments are multiples of this
  size_t mid_segment = size_t{20} << 20;       // one segment shared by large requests up to half it
  int64_t limit_bytes = 0;                     // 0: none
  PoolPolicy policy = PoolPolicy::kFast;
  size_t compact_fit_slack = size_t{4} << 20;
};

/// Rounding of every request (and the alignment of every block): 512 bytes.
inline constexpr size_t kPoolAlignment = 512;
/// Size an allocation request is rounded up to.
size_t RoundAllocationSize(size_t bytes);

/// Stream-ordered caching pool of one device. Thread-safe.
///
/// Allocation, fastest first: a cached block of this stream (best fit, split when larger); a
/// block another stream freed whose free has been fenced by a completed event; a new segment
/// from the driver within the limit. Under pressure: wait for those fences, release fully free
/// segments to the driver least recently used first, spill evictable buffers least recently
/// used first; then MemoryError naming the request, the limit and the pool's state.
class MemoryPool {
 public:
  MemoryPool(hal::Backend* backend, Device device, PoolOptions options = {});
  ~MemoryPool();  // process lifetime in the runtime; tests free everything first
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  /// Enables spill through `engine` (null disables it).
  void set_transfer_engine(TransferEngine* engine) { engine_ = engine; }

  /// A buffer of at least `bytes` bytes for work on `stream`, charged to QuotaScope::Current().
  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(size_t bytes, hal::Stream& stream);
  /// Marks `buffer` as used by work on `stream` (not its own): when freed, its memory is reused
  /// only after that work has finished (PyTorch's record_stream).
  absl::Status RecordStream(Buffer& buffer, hal::Stream& stream);
  /// Allows (or stops) spilling `buffer` under pressure; stopping pages it back in.
  absl::Status SetEvictable(Buffer& buffer, bool evictable);
  /// Spills `buffer` now (it must be evictable and not pinned).
  absl::Status Evict(Buffer& buffer);

  /// Returns every fully free cached segment to the driver (waiting for the streams that last
  /// used them).
  absl::Status EmptyCache();
  /// Process limit on reserved bytes (0: none). Lowering it below what is reserved releases
  /// cached segments; allocations fail once live memory alone exceeds it.
  absl::Status SetLimit(int64_t bytes);
  int64_t limit() const;
  void SetPolicy(PoolPolicy policy);
  PoolPolicy policy() const;
  /// Forgets `stream` before it is destroyed: waits for it and hands its cached blocks to the
  /// other streams.
  absl::Status ForgetStream(hal::Stream& stream);

  MemoryStats stats() const;
  void ResetPeakStats();
  Device device() const { return device_; }
  hal::Backend* backend() const { return backend_; }

 private:
  friend class Buffer;
  friend class ResidencyPin;
  friend struct PoolBlock;

 public:  // internal records (memory_pool_internal.h)
  struct Segment;
  struct StreamState;
  struct BySize {
    bool operator()(const PoolBlock* a, const PoolBlock* b) const;
  };
  using FreeSet = std::set<PoolBlock*, BySize>;

 private:
  // Drops, after the lock is released, the references SpillOne took on buffers it spilled
  // (one of them may be the last). Entry points that may spill declare one before locking.
  class DeferredRelease {
   public:
    explicit DeferredRelease(MemoryPool* pool) : pool_(pool) {}
    ~DeferredRelease();

   private:
    MemoryPool* pool_;
  };

  void Free(Buffer& buffer);
  absl::Status Pin(Buffer& buffer);
  void Unpin(Buffer& buffer);

  // All of these require mu_ (held through `lock`, which some release while they wait).
  absl::StatusOr<PoolBlock*> AllocateBlock(std::unique_lock<std::mutex>& lock, size_t size,
                                           StreamState& ss, size_t requested);
  PoolBlock* TakeFree(StreamState& ss, size_t size, bool small);
  bool Fits(const PoolBlock* b, size_t size, bool small) const;
  PoolBlock* Steal(StreamState& ss, size_t size, bool small);
  bool WaitForFences(std::unique_lock<std::mutex>& lock);
  bool ReleaseSegments(std::unique_lock<std::mutex>& lock, size_t wanted, bool all,
                       absl::Status* error);
  bool SpillOne(std::unique_lock<std::mutex>& lock, const MemoryQuota* quota, absl::Status* error);
  absl::Status SpillLocked(std::unique_lock<std::mutex>& lock, Buffer& buffer);
  absl::Status PageInLocked(std::unique_lock<std::mutex>& lock, Buffer& buffer);
  PoolBlock* Split(PoolBlock* b, size_t size, bool small);
  PoolBlock* NewSegmentBlock(void* base, size_t bytes, bool small, StreamState& ss);
  void InsertFree(PoolBlock* b);
  void EraseFree(PoolBlock* b);
  void FreeBlock(PoolBlock* b);
  static bool Mergeable(const PoolBlock* a, const PoolBlock* n);
  void Absorb(PoolBlock* b, PoolBlock* n);  // b takes its free next neighbour n
  void CoalesceSmall();
  void MarkAllocated(PoolBlock* b, size_t requested);
  // Frees the block of a buffer whose queued work has all finished.
  void ReleaseIdleBlock(PoolBlock* b, size_t requested);
  void ProcessPending();
  void WaitForPending(std::unique_lock<std::mutex>& lock);
  static int64_t QuotaCharge(const Buffer& buffer);  // what a buffer charges its quota
  void UpdateFences(StreamState& ss);
  StreamState& StateFor(hal::Stream* stream);
  PoolBlock* NewBlock();
  void RecycleBlock(PoolBlock* b);
  void LruRemove(Buffer& b);
  void LruAppend(Buffer& b);
  size_t SegmentSize(size_t size, bool small) const;
  std::string Describe(size_t requested, size_t rounded) const;  // for MemoryError texts
  void Account(int64_t allocated_delta, int64_t requested_delta, int64_t blocks_delta);
  // An alloc / free record with the pool's bytes after it, taken under mu_ (so that its time
  // and numbers agree with other threads' records) and added to the trace after unlocking
  // (the lock is not held longer); false when tracing is off.
  bool MemoryRecord(TraceKind kind, size_t bytes, hal::Stream* stream, TraceEntry* out) const;
  Tracer& tracer_ = Tracer::Get();
  const std::string* const alloc_name_ = tracer_.Intern("alloc");
  const std::string* const free_name_ = tracer_.Intern("free");

  hal::Backend* backend_;
  Device device_;
  PoolOptions options_;
  TransferEngine* engine_ = nullptr;
  mutable std::mutex mu_;          // short critical sections; released around every blocking call
  std::condition_variable moved_;  // a spill or page-in finished
  std::vector<std::unique_ptr<StreamState>> streams_;
  std::unique_ptr<StreamState> neutral_;  // blocks no stream's work can still touch
  std::set<Segment*> segments_;
  std::vector<PoolBlock*> pending_;       // freed with uses on other streams, awaiting events
  std::vector<Segment*> dirty_;           // small segments with unmerged free neighbours
  std::vector<PoolBlock*> spare_blocks_;  // recycled block records (no heap churn on a hit)
  std::vector<std::shared_ptr<Buffer>> deferred_;  // see DeferredRelease
  std::atomic<bool> has_deferred_{false};
  Buffer* lru_head_ = nullptr;  // evictable buffers, least recently used first
  Buffer* lru_tail_ = nullptr;
  uint64_t tick_ = 0;
  int64_t growing_ = 0;       // bytes being obtained from the driver (lock released meanwhile)
  bool relaxed_fit_ = false;  // set while the pressure path looks for any block that fits
  MemoryStats stats_;
};

/// Parses a memory limit: "8GiB", "512 MB", "1.5e9", a fraction "0.8" (of `total`) or "80%".
absl::StatusOr<int64_t> ParseMemoryLimit(const std::string& text, int64_t total);
/// "1.50 GiB" style rendering used in messages.
std::string FormatBytes(int64_t bytes);

}  // namespace pygpukit
