// The transfer engine: every host <-> device copy goes through it. Dedicated high-priority H2D
// and D2H streams per device; completion is handed to the consuming stream as an event it waits
// on, so nothing blocks the host unless the caller asks for the data. Pageable host memory is
// staged through pinned chunks with parallel host memcpy overlapped with the DMA of the previous
// chunk; memory from the pinned pool is copied directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/hal/backend.h"
#include "runtime/memory/pinned_pool.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {

/// Counters of one engine.
struct TransferStats {
  int64_t h2d_bytes = 0;
  int64_t d2h_bytes = 0;
  int64_t staged_chunks = 0;  // pinned chunks that pageable memory went through
  int64_t direct_copies = 0;  // copies from/to pinned memory without staging
};

/// Tunables (tests shrink the chunk to exercise the pipeline).
struct TransferOptions {
  size_t chunk_bytes = size_t{16} << 20;  // staging chunk (an H100 sweep: 16 MiB x 2-4 is best)
  int chunks_in_flight = 3;               // staging chunks per copy
};

/// Host <-> device copies of one device. Thread-safe.
class TransferEngine {
 public:
  /// Creates the engine's streams (the highest priority the device offers).
  static absl::StatusOr<std::unique_ptr<TransferEngine>> Create(hal::Backend* backend,
                                                                Device device, PinnedPool* pinned,
                                                                TransferOptions options = {});
  ~TransferEngine();

  /// Copies `bytes` from host `src` to device `dst`, after the work queued on `stream` so far
  /// (which may still use `dst`'s memory); work queued on `stream` later sees the data. Pageable
  /// `src` is free to reuse when this returns; pinned-pool `src` must stay untouched until the
  /// copy completes (stream order, or `blocking`). `blocking` waits for the copy to finish.
  absl::Status ToDevice(void* dst, const void* src, size_t bytes, hal::Stream& stream,
                        bool blocking);
  /// Copies `bytes` from device `src` to host `dst` after the work queued on `stream` so far.
  /// Pageable `dst` is always filled on return. A pinned-pool `dst` with `blocking` false gets an
  /// asynchronous DMA: `stream` waits for it, so later work on `stream` (or synchronizing it)
  /// orders after the data has landed; `src` must then stay allocated until it has (the caller
  /// records the buffer's use on d2h_stream()).
  absl::Status ToHost(void* dst, const void* src, size_t bytes, hal::Stream& stream, bool blocking);

  hal::Stream& h2d_stream() const { return *h2d_; }
  hal::Stream& d2h_stream() const { return *d2h_; }
  PinnedPool& pinned() const { return *pinned_; }
  TransferStats stats() const;

 private:
  TransferEngine(hal::Backend* backend, Device device, PinnedPool* pinned, TransferOptions options);
  // Runs `copy` and records it in the trace as a copy named `name` (the call's host span).
  absl::Status Traced(const std::string* name, size_t bytes, hal::Stream& stream,
                      const std::function<absl::Status()>& copy);
  // ToDevice / ToHost without their trace records.
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes, hal::Stream& stream,
                            bool blocking);
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes, hal::Stream& stream,
                          bool blocking);
  // Makes `later` wait for the work queued on `first` so far.
  absl::Status Order(hal::Stream& first, hal::Stream& later);
  absl::Status StagedToDevice(char* dst, const char* src, size_t bytes);
  absl::Status StagedToHost(char* dst, const char* src, size_t bytes);

  hal::Backend* backend_;
  Device device_;
  PinnedPool* pinned_;
  TransferOptions options_;
  std::unique_ptr<hal::Stream> h2d_, d2h_;
  // The copies' names in the trace (interned once).
  const std::string* const h2d_name_ = Tracer::Get().Intern("copy_h2d");
  const std::string* const d2h_name_ = Tracer::Get().Intern("copy_d2h");
  std::atomic<int64_t> h2d_bytes_{0}, d2h_bytes_{0}, staged_chunks_{0}, direct_copies_{0};
};

}  // namespace pygpukit
