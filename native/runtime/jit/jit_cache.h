// The JIT engine's cache entries, pure logic (unit-tested without a GPU or NVRTC): the key that
// names a compiled image, the on-disk entry format and its validation.
//
// An entry file holds the whole key text next to the image and a checksum of the image, so a
// cache directory is untrusted input: a file whose key differs from the request (a hash
// collision, a stale or foreign file) or whose image does not match its size and checksum
// (truncated, corrupt) is treated as a miss and recompiled, never loaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pygpukit {

/// What the JIT compiles: CUDA C++ source and the options that change its image.
struct JitSource {
  std::string source;
  /// Program name: NVRTC reports errors as "<name>.cu(line): ...". [A-Za-z0-9_] only.
  std::string name;
  /// Extra NVRTC options ("-DTILE=4", "--use_fast_math"); the arch option is added by the engine.
  std::vector<std::string> options;
};

/// Everything an image depends on, as text: format version, NVRTC version, target arch,
/// options, program name and source.
std::string JitKeyText(const JitSource& src, absl::string_view arch,
                       absl::string_view nvrtc_version);
/// Stable 64-bit FNV-1a hash of `text` (file names only: entries are matched on the full key).
uint64_t JitHash(absl::string_view text);
/// File name of the entry for `key_text`: "jit-<16 hex digits>.bin".
std::string JitEntryFileName(absl::string_view key_text);

/// An entry file's contents: a header line, the key text and the image with its size and hash.
std::string FormatJitEntry(absl::string_view key_text, absl::string_view image);
/// The image stored in `file` when it is a complete, intact entry for exactly `key_text`.
std::optional<std::string> ParseJitEntry(absl::string_view file, absl::string_view key_text);

/// The program name for NVRTC: `name` with characters outside [A-Za-z0-9_] replaced by '_'
/// ("kernel" when empty).
std::string JitProgramName(absl::string_view name);

/// `log` followed by the source lines it cites ("<program>.cu(<line>): ..."), each with its
/// number and a line of context on both sides, so an error in generated source can be read
/// without the source at hand.
std::string JitAnnotateLog(absl::string_view log, absl::string_view program,
                           absl::string_view source);

}  // namespace pygpukit
