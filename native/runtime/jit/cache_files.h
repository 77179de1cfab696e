// Files of the runtime's on-disk caches (GEMM tuning choices, JIT-compiled kernels): where they
// live, and reading / replacing them safely when several processes share the directory.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit {

/// Environment lookup (std::getenv by default; injectable for tests).
using GetEnv = std::function<const char*(const char*)>;
/// Directory of the cache files: $PYGPUKIT_CACHE_DIR, else $XDG_CACHE_HOME/pygpukit (when
/// absolute), else $HOME/.cache/pygpukit; "" when none of them is set.
std::string CacheDirectory(const GetEnv& getenv = nullptr);
/// Why a cache is kept in memory only when CacheDirectory finds no directory.
inline constexpr absl::string_view kNoCacheDirectory =
    "no cache directory (set PYGPUKIT_CACHE_DIR, XDG_CACHE_HOME or HOME)";

/// The whole file at `path`: nullopt when it does not exist, an error when it cannot be read or
/// is larger than `max_bytes`.
absl::StatusOr<std::optional<std::string>> ReadSmallFile(const std::string& path, size_t max_bytes);
/// Replaces `path` with `contents` atomically: written to a temporary file in the same directory
/// (created when missing), flushed to disk, then renamed over `path`. Readers see the old or
/// the new file, never a partial one.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents);

}  // namespace pygpukit
