#include "runtime/jit/jit_cache.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace pygpukit {
namespace {

constexpr absl::string_view kEntryMagic = "pygpukit-jit-entry\tformat=1\n";
constexpr absl::string_view kKeyMagic = "pygpukit-jit-key\tformat=1\n";

// Lengths are written out, so options and source may contain any bytes, newlines included.
void AppendField(std::string* out, absl::string_view label, absl::string_view value) {
  absl::StrAppend(out, label, "=", value.size(), "\n", value, "\n");
}

}  // namespace

std::string JitKeyText(const JitSource& src, absl::string_view arch,
                       absl::string_view nvrtc_version) {
  std::string out(kKeyMagic);
  AppendField(&out, "nvrtc", nvrtc_version);
  AppendField(&out, "arch", arch);
  absl::StrAppend(&out, "options=", src.options.size(), "\n");
  for (const std::string& o : src.options) AppendField(&out, "option", o);
  AppendField(&out, "name", JitProgramName(src.name));
  AppendField(&out, "source", src.source);
  return out;
}

uint64_t JitHash(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string JitEntryFileName(absl::string_view key_text) {
  return absl::StrFormat("jit-%016x.bin", JitHash(key_text));
}

std::string FormatJitEntry(absl::string_view key_text, absl::string_view image) {
  std::string out(kEntryMagic);
  AppendField(&out, "key", key_text);
  absl::StrAppend(&out, absl::StrFormat("image-hash=%016x\n", JitHash(image)));
  AppendField(&out, "image", image);
  return out;
}

std::optional<std::string> ParseJitEntry(absl::string_view file, absl::string_view key_text) {
  if (!absl::ConsumePrefix(&file, kEntryMagic)) return std::nullopt;
  // "<label>=<n>\n<n bytes>\n"
  auto field = [&file](absl::string_view label) -> std::optional<absl::string_view> {
    if (!absl::ConsumePrefix(&file, label) || !absl::ConsumePrefix(&file, "=")) {
      return std::nullopt;
    }
    const size_t eol = file.find('\n');
    size_t n = 0;
    if (eol == absl::string_view::npos || eol > 20 || !absl::SimpleAtoi(file.substr(0, eol), &n) ||
        absl::StrCat(n) != file.substr(0, eol)) {
      return std::nullopt;
    }
    file.remove_prefix(eol + 1);
    if (n >= file.size() || file[n] != '\n') return std::nullopt;
    absl::string_view value = file.substr(0, n);
    file.remove_prefix(n + 1);
    return value;
  };
  std::optional<absl::string_view> key = field("key");
  if (!key || *key != key_text) return std::nullopt;
  const std::string hash_line = absl::StrFormat("image-hash=%016x\n", uint64_t{0});
  if (file.size() < hash_line.size() || !absl::StartsWith(file, "image-hash=")) return std::nullopt;
  const absl::string_view stored_hash = file.substr(0, hash_line.size());
  file.remove_prefix(hash_line.size());
  std::optional<absl::string_view> image = field("image");
  if (!image || !file.empty()) return std::nullopt;
  if (stored_hash != absl::StrFormat("image-hash=%016x\n", JitHash(*image))) return std::nullopt;
  return std::string(*image);
}

std::string JitProgramName(absl::string_view name) {
  std::string out;
  for (char c : name.substr(0, 64)) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += keep ? c : '_';
  }
  return out.empty() ? "kernel" : out;
}

std::string JitAnnotateLog(absl::string_view log, absl::string_view program,
                           absl::string_view source) {
  const std::string prefix = absl::StrCat(program, ".cu(");
  std::set<int> cited;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const size_t at = line.find(prefix);
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + prefix.size());
    const size_t close = rest.find(')');
    int n = 0;
    if (close != absl::string_view::npos && absl::SimpleAtoi(rest.substr(0, close), &n) && n > 0) {
      cited.insert(n);
    }
  }
  std::string out(log);
  if (cited.empty()) return out;
  const std::vector<absl::string_view> lines = absl::StrSplit(source, '\n');
  std::set<int> shown;
  for (int n : cited) {
    for (int i = std::max(1, n - 1); i <= std::min<int>(lines.size(), n + 1); ++i) shown.insert(i);
  }
  absl::StrAppend(&out, out.empty() || out.back() == '\n' ? "" : "\n", "source (", program,
                  ".cu):\n");
  int previous = 0;
  for (int i : shown) {
    if (previous != 0 && i != previous + 1) absl::StrAppend(&out, "   ...\n");
    absl::StrAppend(&out,
                    absl::StrFormat("%s%5d | %s\n", cited.count(i) ? ">" : " ", i, lines[i - 1]));
    previous = i;
  }
  return out;
}

}  // namespace pygpukit
