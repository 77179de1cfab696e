// The tune cache's text forms and files. Parsing is strict and canonical (a value is accepted
// only if formatting it back gives the same text), because a cache file is untrusted input: a
// line that is not exactly what this code writes is skipped rather than guessed at.
#include "ops/gemm/gemm_tune_cache.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "runtime/jit/cache_files.h"

namespace pygpukit::ops {
namespace {

constexpr absl::string_view kMagic = "pygpukit-gemm-tune";
constexpr size_t kMaxFileBytes = size_t{16} << 20;

char LayoutLetter(TuneLayout l, char mn) {
  switch (l) {
    case TuneLayout::kKMajor:
      return 'k';
    case TuneLayout::kMNMajor:
      return mn;
    case TuneLayout::kOther:
      break;
  }
  return 'x';
}

std::optional<TuneLayout> ParseLayout(absl::string_view s, char mn) {
  if (s == "k") return TuneLayout::kKMajor;
  if (s.size() == 1 && s[0] == mn) return TuneLayout::kMNMajor;
  if (s == "x") return TuneLayout::kOther;
  return std::nullopt;
}

// Header values are free text (device names); tabs and line breaks would break the format.
std::string HeaderValue(absl::string_view v) {
  std::string out(v);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

std::string TuneKeyText(const TuneKey& k) {
  return absl::StrCat("in=", DTypeName(k.in), ",out=", DTypeName(k.out), ",tf32=", k.tf32 ? 1 : 0,
                      ",m=", k.m, ",n=", k.n, ",k=", k.k, ",batch=", k.batch,
                      ",a=", std::string(1, LayoutLetter(k.a, 'm')),
                      ",b=", std::string(1, LayoutLetter(k.b, 'n')), ",fused=", k.fused ? 1 : 0,
                      ",align=", k.aligned16 ? "16" : "any");
}

absl::StatusOr<TuneKey> ParseTuneKey(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return ValueError(absl::StrCat("gemm tune cache: bad key '", text, "': ", why));
  };
  static constexpr absl::string_view kNames[] = {"in",    "out", "tf32", "m",     "n",    "k",
                                                 "batch", "a",   "b",    "fused", "align"};
  std::vector<absl::string_view> fields = absl::StrSplit(text, ',');
  if (fields.size() != std::size(kNames)) return bad("wrong number of fields");
  absl::string_view values[std::size(kNames)];
  for (size_t i = 0; i < fields.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(fields[i], '=');
    if (kv.first != kNames[i]) return bad(absl::StrCat("expected field '", kNames[i], "'"));
    values[i] = kv.second;
  }
  TuneKey k;
  for (auto [v, dt] : {std::pair{values[0], &k.in}, std::pair{values[1], &k.out}}) {
    absl::StatusOr<DType> d = ParseDType(v);
    if (!d.ok() || !IsInexact(*d)) return bad("unknown dtype");
    *dt = *d;
  }
  for (auto [v, dim] : {std::pair{values[3], &k.m}, std::pair{values[4], &k.n},
                        std::pair{values[5], &k.k}, std::pair{values[6], &k.batch}}) {
    if (!absl::SimpleAtoi(v, dim) || *dim < 1) return bad("dims must be positive integers");
  }
  auto flag = [](absl::string_view v, bool* out) {
    *out = v == "1";
    return v == "0" || v == "1";
  };
  const std::optional<TuneLayout> a = ParseLayout(values[7], 'm'), b = ParseLayout(values[8], 'n');
  if (!flag(values[2], &k.tf32) || !flag(values[9], &k.fused) || !a || !b ||
      (values[10] != "16" && values[10] != "any")) {
    return bad("bad flag, layout or alignment");
  }
  k.a = *a;
  k.b = *b;
  k.aligned16 = values[10] == "16";
  // Canonical form only: "m=01024", "in=f4" and the like are not what this code writes.
  if (TuneKeyText(k) != text) return bad("not in canonical form");
  return k;
}

TuneLayout TuneLayoutOfA(int64_t row, int64_t col) {
  if (col == 1) return TuneLayout::kKMajor;
  if (row == 1) return TuneLayout::kMNMajor;
  return TuneLayout::kOther;
}

TuneLayout TuneLayoutOfB(int64_t row, int64_t col) {
  if (row == 1) return TuneLayout::kKMajor;
  if (col == 1) return TuneLayout::kMNMajor;
  return TuneLayout::kOther;
}

bool Rows16Aligned(const void* ptr, int itemsize, std::initializer_list<int64_t> strides) {
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  for (int64_t s : strides) {
    const int64_t mag = s < 0 ? -s : s;
    if (mag > 1 && (mag * itemsize) % 16 != 0) return false;
  }
  return true;
}

std::string TuneChoiceText(const TuneChoice& c) {
  if (c.family == GemmFamily::kSm90) {
    return absl::StrCat("sm90:", c.sm90_bn, ":", c.sm90_cluster);
  }
  return std::string(GemmFamilyName(c.family));
}

absl::StatusOr<TuneChoice> ParseTuneChoice(absl::string_view text) {
  auto bad = [&] {
    return ValueError(absl::StrCat("gemm tune cache: bad choice '", text,
                                   "' (expected sm90:128:1, sm90:256:1, sm90:256:2, sm80, simt "
                                   "or cublaslt)"));
  };
  for (GemmFamily f : {GemmFamily::kSm80, GemmFamily::kSimt, GemmFamily::kCublasLt}) {
    if (text == GemmFamilyName(f)) return TuneChoice{f, 0, 0};
  }
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  TuneChoice c{GemmFamily::kSm90, 0, 0};
  if (parts.size() != 3 || parts[0] != "sm90" || !absl::SimpleAtoi(parts[1], &c.sm90_bn) ||
      !absl::SimpleAtoi(parts[2], &c.sm90_cluster)) {
    return bad();
  }
  const bool built = (c.sm90_bn == 128 && c.sm90_cluster == 1) ||
                     (c.sm90_bn == 256 && (c.sm90_cluster == 1 || c.sm90_cluster == 2));
  if (!built || TuneChoiceText(c) != text) return bad();
  return c;
}

std::string TuneCacheHeaderLine(const TuneCacheHeader& h) {
  return absl::StrCat(kMagic, "\tformat=", h.format, "\tpygpukit=", HeaderValue(h.pygpukit_version),
                      "\tdevice=", HeaderValue(h.device_name), "\tsm=", h.sm,
                      "\tdriver=", h.driver_version, "\tcublaslt=", HeaderValue(h.cublaslt_version),
                      "\tkernels=", HeaderValue(h.kernel_archs));
}

absl::string_view TuneFileStatusName(TuneFileStatus s) {
  switch (s) {
    case TuneFileStatus::kNotRead:
      return "not read";
    case TuneFileStatus::kMissing:
      return "missing";
    case TuneFileStatus::kLoaded:
      return "loaded";
    case TuneFileStatus::kVersionMismatch:
      return "version mismatch";
    case TuneFileStatus::kNotACacheFile:
      return "not a cache file";
    case TuneFileStatus::kUnreadable:
      return "unreadable";
  }
  return "?";
}

TuneFileContents ParseTuneCacheFile(absl::string_view text, const TuneCacheHeader& expected) {
  TuneFileContents out;
  const size_t eol = text.find('\n');
  const absl::string_view header = text.substr(0, eol);
  if (!absl::StartsWith(header, absl::StrCat(kMagic, "\t"))) {
    out.status = TuneFileStatus::kNotACacheFile;
    return out;
  }
  if (eol == absl::string_view::npos || header != TuneCacheHeaderLine(expected)) {
    out.status = TuneFileStatus::kVersionMismatch;
    return out;
  }
  out.status = TuneFileStatus::kLoaded;
  absl::string_view rest = text.substr(eol + 1);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const absl::string_view line = rest.substr(0, end);
    rest = end == absl::string_view::npos ? absl::string_view() : rest.substr(end + 1);
    if (line.empty()) continue;
    // A last line without its newline is what a torn write leaves: never trusted.
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    absl::StatusOr<TuneChoice> choice = ValueError("gemm tune cache: malformed line");
    double us = 0.0;
    if (end != absl::string_view::npos && f.size() == 3 && ParseTuneKey(f[0]).ok()) {
      choice = ParseTuneChoice(f[1]);
    }
    if (!choice.ok() || !absl::SimpleAtod(f[2], &us) || !std::isfinite(us) || us <= 0.0) {
      ++out.skipped_lines;
      continue;
    }
    out.entries[std::string(f[0])] = TuneEntry{*choice, us};
  }
  return out;
}

std::string FormatTuneCacheFile(const TuneCacheHeader& header, const TuneEntries& entries) {
  std::string out = absl::StrCat(TuneCacheHeaderLine(header), "\n");
  for (const auto& [key, e] : entries) {
    absl::StrAppend(&out, key, " ", TuneChoiceText(e.choice), " ",
                    absl::StrFormat("%.3f", std::max(e.us, 0.001)), "\n");
  }
  return out;
}

std::string TuneCacheFileName(absl::string_view device_name, int sm) {
  std::string name;
  for (char c : device_name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (keep) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
    if (name.size() >= 96) break;
  }
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  // Dots alone would make "." or ".." path components.
  if (name.find_first_not_of('.') == std::string::npos) name = "device";
  return absl::StrCat("gemm-tune-", name, "-sm", sm, ".txt");
}

// ---- GemmTuneCache ----

void GemmTuneCache::Load(const TuneCacheHeader& header, const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (loaded_) return;
  loaded_ = true;
  header_ = header;
  path_ = path;
  file_status_ = TuneFileStatus::kNotRead;
  if (path.empty()) {
    DiskFailed(kNoCacheDirectory);
    return;
  }
  absl::StatusOr<std::optional<std::string>> text = ReadSmallFile(path, kMaxFileBytes);
  if (!text.ok()) {
    file_status_ = TuneFileStatus::kUnreadable;
    DiskFailed(text.status().message());
    return;
  }
  if (!text->has_value()) {
    file_status_ = TuneFileStatus::kMissing;
    return;
  }
  // A file at our own name in our cache directory that does not parse is a corrupt one of ours:
  // nothing in it is trusted, and the next save replaces it.
  TuneFileContents c = ParseTuneCacheFile(**text, header);
  file_status_ = c.status;
  skipped_lines_ = c.skipped_lines;
  for (auto& [key, e] : c.entries) entries_.emplace(key, e);
}

bool GemmTuneCache::loaded() const {
  std::lock_guard<std::mutex> l(mu_);
  return loaded_;
}

std::optional<TuneEntry> GemmTuneCache::Lookup(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second;
}

void GemmTuneCache::Store(const std::string& key, const TuneEntry& entry) {
  TuneEntries snapshot;
  TuneCacheHeader header;
  std::string path;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> l(mu_);
    entries_[key] = entry;
    ++tuned_;
    if (!loaded_ || !disk_ok_ || path_.empty()) return;
    snapshot.insert(entries_.begin(), entries_.end());
    header = header_;
    path = path_;
    generation = generation_;
  }
  std::lock_guard<std::mutex> save(save_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (generation != generation_ || !disk_ok_) return;  // cleared, or failed, meanwhile
  }
  // Other processes (and earlier snapshots of this one) may have saved since: keep the entries
  // on disk when this save reads them, ours win on the same key. There is no file lock, so two
  // processes saving at the same moment can drop one's newest entry (it is tuned again later).
  // Each save rewrites the whole file: tuning runs once per problem key, so this stays small.
  if (auto text = ReadSmallFile(path, kMaxFileBytes); text.ok() && text->has_value()) {
    TuneFileContents on_disk = ParseTuneCacheFile(**text, header);
    snapshot.merge(on_disk.entries);
  }
  absl::Status st = WriteFileAtomic(path, FormatTuneCacheFile(header, snapshot));
  if (!st.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    if (generation == generation_) DiskFailed(st.message());
  }
}

void GemmTuneCache::MarkUntunable(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  untunable_.insert(key);
}

bool GemmTuneCache::Untunable(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  return untunable_.contains(key);
}

absl::Status GemmTuneCache::Clear(bool disk) {
  std::lock_guard<std::mutex> save(save_mu_);
  std::lock_guard<std::mutex> l(mu_);
  entries_.clear();
  untunable_.clear();
  hits_ = misses_ = tuned_ = skipped_lines_ = 0;
  loaded_ = false;
  file_status_ = TuneFileStatus::kNotRead;
  disk_ok_ = true;
  warned_ = false;
  disk_error_.clear();
  ++generation_;
  if (!disk || path_.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  if (ec) return RuntimeError(absl::StrCat("cannot delete ", path_, ": ", ec.message()));
  return absl::OkStatus();
}

TuneCacheStats GemmTuneCache::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  TuneCacheStats s;
  s.path = path_;
  s.loaded = loaded_;
  s.file_status = file_status_;
  s.entries = static_cast<int64_t>(entries_.size());
  s.hits = hits_;
  s.misses = misses_;
  s.tuned = tuned_;
  s.skipped_lines = skipped_lines_;
  s.disk_usable = disk_ok_;
  s.disk_error = disk_error_;
  return s;
}

void GemmTuneCache::DiskFailed(absl::string_view why) {
  disk_ok_ = false;
  disk_error_ = std::string(why);
  if (warned_) return;
  warned_ = true;
  std::fprintf(stderr, "pygpukit: GEMM tune cache %s: %s; tuned choices stay in memory\n",
               path_.empty() ? "disabled" : path_.c_str(), disk_error_.c_str());
}

}  // namespace pygpukit::ops
