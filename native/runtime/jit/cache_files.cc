#include "runtime/jit/cache_files.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

std::string CacheDirectory(const GetEnv& getenv) {
  auto env = [&](const char* name) -> std::string {
    const char* v = getenv ? getenv(name) : std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  if (std::string d = env("PYGPUKIT_CACHE_DIR"); !d.empty()) return d;
  // The XDG spec says relative values are invalid and must be ignored.
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/') return x + "/pygpukit";
  if (std::string h = env("HOME"); !h.empty()) return h + "/.cache/pygpukit";
  return "";
}

absl::StatusOr<std::optional<std::string>> ReadSmallFile(const std::string& path,
                                                         size_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return RuntimeError(absl::StrCat("cannot open ", path, ": ", ErrnoText(errno)));
  }
  std::string data;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    data.append(buf, n);
    if (data.size() > max_bytes) {
      std::fclose(f);
      return RuntimeError(absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
    }
  }
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return RuntimeError(absl::StrCat("cannot read ", path, ": ", ErrnoText(err)));
  return std::optional<std::string>(std::move(data));
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      return RuntimeError(
          absl::StrCat("cannot create ", target.parent_path().string(), ": ", ec.message()));
    }
  }
  // Unique per process and call, so concurrent writers never share a temporary.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".", counter.fetch_add(1));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return RuntimeError(absl::StrCat("cannot write ", tmp, ": ", ErrnoText(errno)));
  bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(fileno(f)) == 0 && ok;
  int err = errno;
  ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return absl::OkStatus();
  if (ok) err = errno;
  std::remove(tmp.c_str());
  return RuntimeError(absl::StrCat("cannot write ", path, ": ", ErrnoText(err)));
}

}  // namespace pygpukit
