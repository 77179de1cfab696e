#include "runtime/memory/transfer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {
namespace {

// Host memcpy spread over the worker threads: one thread cannot saturate the DMA engines, and
// first-touch page faults on a fresh destination are taken in parallel.
void ParallelCopy(char* dst, const char* src, size_t bytes) {
  constexpr int64_t kGrain = int64_t{1} << 20;
  cpu::ParallelFor(static_cast<int64_t>(bytes), kGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

// Staging chunks of one copy, each with the event of the DMA that last used it.
struct Staging {
  struct Slot {
    char* host = nullptr;
    std::unique_ptr<hal::Event> event;
    bool busy = false;  // event recorded, not yet waited for
  };
  PinnedPool* pool;
  hal::Stream* stream;  // the transfer stream the chunks are used on
  std::vector<Slot> slots;
  size_t chunk = 0;

  Staging(PinnedPool* p, hal::Stream* s) : pool(p), stream(s) {}
  Staging(Staging&&) = default;
  ~Staging() {
    hal::Stream* s = stream;
    for (Slot& slot : slots) (void)pool->Free(slot.host, absl::MakeSpan(&s, 1));
  }
};

constexpr size_t kMinChunk = size_t{64} << 10;

// Staging chunks for a copy of `bytes`: up to options.chunks_in_flight chunks of up to
// options.chunk_bytes.
absl::StatusOr<Staging> MakeStaging(hal::Backend* backend, Device device, PinnedPool* pool,
                                    hal::Stream* stream, size_t bytes,
                                    const TransferOptions& options) {
  size_t chunk = std::min(options.chunk_bytes, bytes);
  const int count =
      static_cast<int>(std::min<size_t>((bytes + chunk - 1) / chunk, options.chunks_in_flight));
  Staging st(pool, stream);
  for (int i = 0; i < count; ++i) {
    auto host = pool->Allocate(chunk);
    // Under a tight pinned limit: smaller chunks first, then fewer in flight.
    while (!host.ok() && i == 0 && host.status().code() == absl::StatusCode::kResourceExhausted &&
           chunk > kMinChunk) {
      chunk = std::max(kMinChunk, chunk / 2);
      host = pool->Allocate(chunk);
    }
    if (!host.ok()) {
      if (i == 0) return host.status();
      break;
    }
    Staging::Slot slot;
    slot.host = static_cast<char*>(*host);
    auto ev = backend->CreateEvent(device.index, false);
    if (!ev.ok()) {
      (void)pool->Free(slot.host);
      return ev.status();
    }
    slot.event = std::move(*ev);
    st.slots.push_back(std::move(slot));
  }
  st.chunk = chunk;
  return st;
}

// When no pinned memory is left to stage through (`why` is MemoryError): the driver's own
// (slower, blocking) pageable copy. Other errors are returned.
absl::Status UnstagedCopy(hal::Backend* backend, const absl::Status& why, void* dst,
                          const void* src, size_t bytes, hal::CopyKind kind, hal::Stream& stream) {
  if (why.code() != absl::StatusCode::kResourceExhausted) return why;
  PGK_RETURN_IF_ERROR(backend->CopyAsync(dst, src, bytes, kind, stream));
  return backend->Synchronize(stream);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TransferEngine>> TransferEngine::Create(hal::Backend* backend,
                                                                       Device device,
                                                                       PinnedPool* pinned,
                                                                       TransferOptions options) {
  std::unique_ptr<TransferEngine> e(new TransferEngine(backend, device, pinned, options));
  const int top = backend->StreamPriorityRange().second;  // copies should not queue behind compute
  PGK_ASSIGN_OR_RETURN(e->h2d_, backend->CreateStream(device.index, top));
  PGK_ASSIGN_OR_RETURN(e->d2h_, backend->CreateStream(device.index, top));
  return e;
}

TransferEngine::TransferEngine(hal::Backend* backend, Device device, PinnedPool* pinned,
                               TransferOptions options)
    : backend_(backend), device_(device), pinned_(pinned), options_(options) {
  options_.chunk_bytes = std::max<size_t>(options_.chunk_bytes, 4096);
  options_.chunks_in_flight = std::max(options_.chunks_in_flight, 1);
}

TransferEngine::~TransferEngine() = default;

absl::Status TransferEngine::Order(hal::Stream& first, hal::Stream& later) {
  PGK_ASSIGN_OR_RETURN(auto ev, backend_->CreateEvent(device_.index, false));
  PGK_RETURN_IF_ERROR(backend_->Record(*ev, first));
  return backend_->Wait(later, *ev);
}

absl::Status TransferEngine::Traced(const std::string* name, size_t bytes, hal::Stream& stream,
                                    const std::function<absl::Status()>& copy) {
  const uint64_t begin = Tracer::Ticks();
  absl::Status s = copy();
  if (s.ok() && bytes > 0) {
    Tracer::Get().AddSpan(TraceKind::kCopy, name, device_, reinterpret_cast<uintptr_t>(&stream),
                          begin, static_cast<int64_t>(bytes));
  }
  return s;
}

absl::Status TransferEngine::ToDevice(void* dst, const void* src, size_t bytes, hal::Stream& stream,
                                      bool blocking) {
  return Traced(h2d_name_, bytes, stream,
                [&] { return CopyToDevice(dst, src, bytes, stream, blocking); });
}

absl::Status TransferEngine::ToHost(void* dst, const void* src, size_t bytes, hal::Stream& stream,
                                    bool blocking) {
  return Traced(d2h_name_, bytes, stream,
                [&] { return CopyToHost(dst, src, bytes, stream, blocking); });
}

absl::Status TransferEngine::CopyToDevice(void* dst, const void* src, size_t bytes,
                                          hal::Stream& stream, bool blocking) {
  if (bytes == 0) return absl::OkStatus();
  // The destination may be memory that work queued on `stream` still uses.
  PGK_RETURN_IF_ERROR(Order(stream, *h2d_));
  if (pinned_->Contains(src, bytes)) {
    PGK_RETURN_IF_ERROR(backend_->CopyAsync(dst, src, bytes, hal::CopyKind::kHostToDevice, *h2d_));
    direct_copies_.fetch_add(1, std::memory_order_relaxed);
  } else {
    PGK_RETURN_IF_ERROR(
        StagedToDevice(static_cast<char*>(dst), static_cast<const char*>(src), bytes));
  }
  h2d_bytes_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  PGK_ASSIGN_OR_RETURN(auto done, backend_->CreateEvent(device_.index, false));
  PGK_RETURN_IF_ERROR(backend_->Record(*done, *h2d_));
  PGK_RETURN_IF_ERROR(backend_->Wait(stream, *done));
  if (blocking) return backend_->Synchronize(*done);
  return absl::OkStatus();
}

absl::Status TransferEngine::StagedToDevice(char* dst, const char* src, size_t bytes) {
  auto staging = MakeStaging(backend_, device_, pinned_, h2d_.get(), bytes, options_);
  if (!staging.ok()) {
    return UnstagedCopy(backend_, staging.status(), dst, src, bytes, hal::CopyKind::kHostToDevice,
                        *h2d_);
  }
  Staging& st = *staging;
  const size_t chunk = st.chunk, n = (bytes + chunk - 1) / chunk;
  // Pipeline: while the DMA of chunk i runs, the host fills the next slot.
  for (size_t i = 0; i < n; ++i) {
    Staging::Slot& slot = st.slots[i % st.slots.size()];
    if (slot.busy) PGK_RETURN_IF_ERROR(backend_->Synchronize(*slot.event));
    const size_t off = i * chunk, len = std::min(chunk, bytes - off);
    ParallelCopy(slot.host, src + off, len);
    PGK_RETURN_IF_ERROR(
        backend_->CopyAsync(dst + off, slot.host, len, hal::CopyKind::kHostToDevice, *h2d_));
    PGK_RETURN_IF_ERROR(backend_->Record(*slot.event, *h2d_));
    slot.busy = true;
    staged_chunks_.fetch_add(1, std::memory_order_relaxed);
  }
  return absl::OkStatus();  // the slots return to the pool fenced on h2d
}

absl::Status TransferEngine::CopyToHost(void* dst, const void* src, size_t bytes,
                                        hal::Stream& stream, bool blocking) {
  if (bytes == 0) return absl::OkStatus();
  PGK_RETURN_IF_ERROR(Order(stream, *d2h_));  // after the work that produces the data
  d2h_bytes_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  if (pinned_->Contains(dst, bytes)) {
    PGK_RETURN_IF_ERROR(backend_->CopyAsync(dst, src, bytes, hal::CopyKind::kDeviceToHost, *d2h_));
    direct_copies_.fetch_add(1, std::memory_order_relaxed);
    PGK_ASSIGN_OR_RETURN(auto done, backend_->CreateEvent(device_.index, false));
    PGK_RETURN_IF_ERROR(backend_->Record(*done, *d2h_));
    PGK_RETURN_IF_ERROR(backend_->Wait(stream, *done));
    if (blocking) return backend_->Synchronize(*done);
    return absl::OkStatus();
  }
  return StagedToHost(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
}

absl::Status TransferEngine::StagedToHost(char* dst, const char* src, size_t bytes) {
  // A fresh destination (a new NumPy array) faults in page by page, which costs more than the
  // copy: ask the kernel for transparent huge pages over its aligned interior (a hint; pages
  // already present are unaffected).
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(dst) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(dst) + bytes) & ~(kHuge - 1);
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
  auto staging = MakeStaging(backend_, device_, pinned_, d2h_.get(), bytes, options_);
  if (!staging.ok()) {
    return UnstagedCopy(backend_, staging.status(), dst, src, bytes, hal::CopyKind::kDeviceToHost,
                        *d2h_);
  }
  Staging& st = *staging;
  const size_t chunk = st.chunk, n = (bytes + chunk - 1) / chunk;
  const size_t k = st.slots.size();
  auto enqueue = [&](size_t i) -> absl::Status {
    Staging::Slot& slot = st.slots[i % k];
    const size_t off = i * chunk, len = std::min(chunk, bytes - off);
    PGK_RETURN_IF_ERROR(
        backend_->CopyAsync(slot.host, src + off, len, hal::CopyKind::kDeviceToHost, *d2h_));
    PGK_RETURN_IF_ERROR(backend_->Record(*slot.event, *d2h_));
    slot.busy = true;
    staged_chunks_.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  };
  // Keep k DMAs queued; drain chunk i into `dst` while the next ones are copied.
  for (size_t i = 0; i < std::min(n, k); ++i) PGK_RETURN_IF_ERROR(enqueue(i));
  for (size_t i = 0; i < n; ++i) {
    Staging::Slot& slot = st.slots[i % k];
    PGK_RETURN_IF_ERROR(backend_->Synchronize(*slot.event));
    slot.busy = false;
    const size_t off = i * chunk, len = std::min(chunk, bytes - off);
    ParallelCopy(dst + off, slot.host, len);
    if (i + k < n) PGK_RETURN_IF_ERROR(enqueue(i + k));
  }
  return absl::OkStatus();
}

TransferStats TransferEngine::stats() const {
  TransferStats s;
  s.h2d_bytes = h2d_bytes_.load(std::memory_order_relaxed);
  s.d2h_bytes = d2h_bytes_.load(std::memory_order_relaxed);
  s.staged_chunks = staged_chunks_.load(std::memory_order_relaxed);
  s.direct_copies = direct_copies_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace pygpukit
