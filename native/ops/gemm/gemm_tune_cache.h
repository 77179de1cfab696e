// GEMM autotuning cache: what a tuned choice is keyed by, how choices are written down, and how
// they persist across processes (one plain-text file per device model, invalidated whole when
// any version it depends on changes). Pure logic and file I/O, no CUDA, so every rule is tested
// on machines without a GPU (tests/cpp/gemm_tune_cache_test.cc). The tuner that fills it is
// ops/gemm/cuda/gemm_autotune_cuda.cc; the switch and the per-device registry are in
// ops/gemm/gemm_tune.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "ops/gemm/gemm_family.h"

namespace pygpukit::ops {

/// Which matrix dim of an operand has the unit stride: K (A: column, B: row), M / N, or neither.
enum class TuneLayout : uint8_t { kKMajor, kMNMajor, kOther };

/// Device-independent description of a GEMM problem: the problems one tuned choice serves.
struct TuneKey {
  DType in = DType::Float32, out = DType::Float32;
  bool tf32 = false;
  int64_t m = 1, n = 1, k = 1, batch = 1;
  TuneLayout a = TuneLayout::kKMajor, b = TuneLayout::kKMajor;
  bool fused = false;  // a non-trivial epilogue, or an output dtype other than the inputs'
  // Every operand's address, leading dim and batch stride is a multiple of 16 bytes (what the
  // tensor-core families need), so a choice tuned on one such problem applies to the others.
  bool aligned16 = false;
  bool operator==(const TuneKey&) const = default;
};

/// Stable text form, e.g. "in=bfloat16,out=bfloat16,tf32=0,m=1024,n=1024,k=1024,batch=1,a=k,
/// b=n,fused=0,align=16" (one line, no spaces); cache files are keyed by it.
std::string TuneKeyText(const TuneKey& key);
/// Parses exactly the form TuneKeyText writes (every field, in order, canonical numbers);
/// ValueError otherwise.
absl::StatusOr<TuneKey> ParseTuneKey(absl::string_view text);
/// Layout class of A (m x k) with element strides (row, col); K-major wins when both are 1.
TuneLayout TuneLayoutOfA(int64_t row, int64_t col);
/// Layout class of B (k x n) with element strides (row, col); K-major wins when both are 1.
TuneLayout TuneLayoutOfB(int64_t row, int64_t col);
/// Whether `ptr` is 16-byte aligned and every stride (in elements of `itemsize` bytes) other
/// than 0 and +-1 spans a multiple of 16 bytes.
bool Rows16Aligned(const void* ptr, int itemsize, std::initializer_list<int64_t> strides);

/// A tuned choice (the tune cache's name for a GemmChoice).
using TuneChoice = GemmChoice;

/// "sm90:<bn>:<cluster>", "sm80", "simt" or "cublaslt".
std::string TuneChoiceText(const TuneChoice& choice);
/// Parses TuneChoiceText's form; ValueError for anything else, including sm90 configurations
/// that are not built (a tile width other than 128 / 256, cluster 2 with width 128).
absl::StatusOr<TuneChoice> ParseTuneChoice(absl::string_view text);

/// One cache entry: the choice and the winner's measured time per launch.
struct TuneEntry {
  TuneChoice choice;
  double us = 0.0;
  bool operator==(const TuneEntry&) const = default;
};

/// Entries by key text, sorted (so that files are written in a stable order).
using TuneEntries = std::map<std::string, TuneEntry>;

/// Version of the cache file format; a file of another version is ignored. 2: "sm90:<bn>:1"
/// runs the launch plan's split-K (ops/gemm/gemm_sm90_plan.h), so version-1 timings are stale.
inline constexpr int kTuneCacheFormat = 2;

/// Everything besides the key a tuned choice depends on. A file whose header differs from the
/// running one in any field is ignored whole (and rewritten at the next tuning).
struct TuneCacheHeader {
  int format = kTuneCacheFormat;
  std::string pygpukit_version;
  std::string device_name;
  int sm = 0;  // compute capability as major * 10 + minor
  int driver_version = 0;
  std::string cublaslt_version;
  std::string kernel_archs;  // archs of the embedded kernels (which families this build has)
  bool operator==(const TuneCacheHeader&) const = default;
};

/// The header line (tab-separated "name=value" fields after a magic word; no newline).
std::string TuneCacheHeaderLine(const TuneCacheHeader& header);

/// What became of a cache file when it was read.
enum class TuneFileStatus {
  kNotRead,
  kMissing,
  kLoaded,
  kVersionMismatch,
  kNotACacheFile,
  kUnreadable
};
/// Lower-case name of a file status ("loaded", "version mismatch", ...).
absl::string_view TuneFileStatusName(TuneFileStatus status);

/// The usable contents of a cache file.
struct TuneFileContents {
  TuneFileStatus status = TuneFileStatus::kMissing;
  TuneEntries entries;
  int64_t skipped_lines = 0;  // entry lines that did not parse (never trusted)
};

/// Parses a cache file's text. Nothing is taken when its header is not exactly `expected`'s;
/// entry lines ("<key> <choice> <us>") that do not parse are skipped, as is a last line without
/// its newline (a truncated write). The last of duplicate keys wins.
TuneFileContents ParseTuneCacheFile(absl::string_view text, const TuneCacheHeader& expected);
/// A cache file's text: the header line, then one entry line per key in key order.
std::string FormatTuneCacheFile(const TuneCacheHeader& header, const TuneEntries& entries);

/// File name of a device model's cache: "gemm-tune-<device name>-sm<XY>.txt", the name reduced
/// to [A-Za-z0-9._-] (other runs of characters become one '-').
std::string TuneCacheFileName(absl::string_view device_name, int sm);

/// Counters and state of one device's cache (gp.gemm_tune_cache_info).
struct TuneCacheStats {
  std::string path;  // the cache file ("" when it is kept in memory only)
  bool loaded = false;
  TuneFileStatus file_status = TuneFileStatus::kNotRead;
  int64_t entries = 0, hits = 0, misses = 0, tuned = 0, skipped_lines = 0;
  bool disk_usable = true;
  std::string disk_error;  // why the disk is not used ("" while it is)
};

/// The tuned choices of one device, in memory and backed by a file. Thread-safe. Disk failures
/// never surface as errors: the cache falls back to memory only, says so once on stderr and in
/// stats().
class GemmTuneCache {
 public:
  /// Reads `path` on the first call after construction or Clear (later calls do nothing): the
  /// entries of a file whose header is `header`. An empty path means memory only.
  void Load(const TuneCacheHeader& header, const std::string& path);
  /// Whether Load has run since construction or the last Clear.
  bool loaded() const;
  /// The entry of `key` (TuneKeyText), counting a hit or a miss.
  std::optional<TuneEntry> Lookup(const std::string& key);
  /// Records a tuned choice in memory and, while the disk is usable, rewrites the file with it
  /// (keeping entries other processes saved meanwhile).
  void Store(const std::string& key, const TuneEntry& entry);
  /// Remembers, in memory only, that tuning `key` failed (no scratch memory, or no candidate
  /// served it): the rules serve it from then on, without a scratch allocation per call.
  void MarkUntunable(const std::string& key);
  /// Whether MarkUntunable(key) was called since construction or the last Clear.
  bool Untunable(const std::string& key) const;
  /// Forgets the entries, the untunable keys, the counters and the load (the file is read again on
  /// next use); `disk` also deletes the loaded file. Errors only for a file that could not be
  /// deleted.
  absl::Status Clear(bool disk);
  /// A snapshot of the counters and the disk state.
  TuneCacheStats stats() const;

 private:
  void DiskFailed(absl::string_view why);  // mu_ held

  std::mutex save_mu_;  // serializes file rewrites and Clear; taken before mu_
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, TuneEntry> entries_;
  absl::flat_hash_set<std::string> untunable_;
  TuneCacheHeader header_;
  std::string path_;
  bool loaded_ = false;
  TuneFileStatus file_status_ = TuneFileStatus::kNotRead;
  int64_t hits_ = 0, misses_ = 0, tuned_ = 0, skipped_lines_ = 0;
  bool disk_ok_ = true, warned_ = false;
  std::string disk_error_;
  uint64_t generation_ = 0;  // bumped by Clear: a rewrite begun before it is dropped
};

}  // namespace pygpukit::ops
