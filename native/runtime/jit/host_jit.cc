#include "runtime/jit/host_jit.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "runtime/jit/cache_files.h"
#include "runtime/jit/jit_cache.h"
#include "runtime/jit/jit_headers.h"

namespace pygpukit {
namespace {

namespace fs = std::filesystem;

std::string Compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

// Runs `cmd` through the shell; its exit status and combined output.
std::pair<int, std::string> Run(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  return {status, out};
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

class HostJit {
 public:
  HostJitInfo Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    HostJitInfo i = stats_;
    i.directory = dir_;
    i.loaded = static_cast<int64_t>(handles_.size());
    return i;
  }

  absl::Status Clear(bool disk) {
    std::lock_guard<std::mutex> lock(mu_);
    handles_.clear();
    symbols_.clear();
    std::string dir = dir_;
    dir_.clear();  // chosen again (from the environment) on the next use
    if (!disk) return absl::OkStatus();
    if (dir.empty()) {
      const std::string base = CacheDirectory();
      if (base.empty()) return absl::OkStatus();
      dir = base + "/host";
    }
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (absl::StartsWith(name, "k-") || absl::StartsWith(name, "include-")) {
        std::error_code rm;
        fs::remove_all(it->path(), rm);
        if (rm)
          return RuntimeError(
              absl::StrCat("host jit: removing ", it->path().string(), ": ", rm.message()));
      }
    }
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return RuntimeError(absl::StrCat("host jit: clearing ", dir, ": ", ec.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Symbol(absl::string_view name, absl::FunctionRef<std::string()> make,
                               absl::string_view symbol) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string compiler = Compiler();
    const std::string memo = absl::StrCat(compiler, "\x01", symbol, "\x01", name);
    if (auto it = symbols_.find(memo); it != symbols_.end()) return it->second;
    const std::string source = make();
    const std::string key = absl::StrFormat("%016x", JitHash(absl::StrCat(compiler, "\n", source)));
    void*& handle = handles_[key];
    if (handle == nullptr) {
      absl::StatusOr<void*> loaded = Load(source, compiler, key);
      if (!loaded.ok()) {
        handles_.erase(key);
        return loaded.status();
      }
      handle = *loaded;
    }
    void* fn = dlsym(handle, std::string(symbol).c_str());
    if (fn == nullptr) {
      return ValueError(absl::StrCat("host jit: the compiled source defines no '", symbol, "'"));
    }
    symbols_.emplace(memo, fn);
    return fn;
  }

 private:
  // The directory of the shared objects and of the headers they include.
  // The embedded headers' identity: a library update never reuses a stale include folder or
  // shared object.
  static uint64_t HeadersHash() {
    std::string all;
    for (const JitHeader& h : JitEmbeddedHeaders()) {
      absl::StrAppend(&all, h.name, "\n", absl::string_view(h.text, h.size), "\n");
    }
    return JitHash(all);
  }

  // Writes the embedded headers (not the NVRTC stand-ins for standard headers, which have no
  // '/') under `dir`/include-<hash>.
  static absl::Status WriteHeaders(const std::string& include) {
    for (const JitHeader& h : JitEmbeddedHeaders()) {
      const std::string name = h.name;
      if (name.find('/') == std::string::npos) continue;
      const std::string path = absl::StrCat(include, "/", name);
      absl::StatusOr<std::optional<std::string>> old = ReadSmallFile(path, 1 << 22);
      if (old.ok() && old->has_value() && **old == absl::string_view(h.text, h.size)) continue;
      PGK_RETURN_IF_ERROR(WriteFileAtomic(path, absl::string_view(h.text, h.size)));
    }
    return absl::OkStatus();
  }

  // The directory of the shared objects: <cache dir>/host, or a private temporary directory
  // when there is no usable cache directory.
  absl::StatusOr<std::string> Directory() {
    if (!dir_.empty()) return dir_;
    const std::string suffix = absl::StrFormat("/include-%016x", HeadersHash());
    if (const std::string base = CacheDirectory(); !base.empty()) {
      const std::string dir = base + "/host";
      std::error_code ec;
      fs::create_directories(dir + suffix, ec);
      if (!ec && WriteHeaders(dir + suffix).ok()) return dir_ = dir;
    }
    std::string tmpl = (fs::temp_directory_path() / "pygpukit-host-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return RuntimeError("host jit: no usable cache directory and no temporary directory");
    }
    std::error_code ec;
    fs::create_directories(tmpl + suffix, ec);
    if (ec) return RuntimeError(absl::StrCat("host jit: creating ", tmpl, ": ", ec.message()));
    PGK_RETURN_IF_ERROR(WriteHeaders(tmpl + suffix));
    return dir_ = tmpl;
  }

  // Everything the shared object depends on, stored in its cache entry and compared on load:
  // a file for another source (a hash collision), compiler or header set is a miss.
  static std::string KeyText(const std::string& source, const std::string& compiler,
                             uint64_t headers) {
    return absl::StrFormat("host-jit\ncompiler=%s\nheaders=%016x\n%s", compiler, headers, source);
  }

  // The loaded shared object of `source`: from the cache entry when it is intact (the cache
  // directory is untrusted input: a truncated, corrupt or foreign entry is recompiled, never
  // loaded), else compiled now and stored.
  absl::StatusOr<void*> Load(const std::string& source, const std::string& compiler,
                             const std::string& key) {
    PGK_ASSIGN_OR_RETURN(std::string dir, Directory());
    const uint64_t headers = HeadersHash();
    const std::string stem = absl::StrFormat("%s/k-%s-%016x", dir, key, headers);
    const std::string entry = stem + ".bin";
    const std::string key_text = KeyText(source, compiler, headers);
    absl::StatusOr<std::optional<std::string>> file = ReadSmallFile(entry, kMaxEntryBytes);
    if (file.ok() && file->has_value()) {
      if (std::optional<std::string> image = ParseJitEntry(**file, key_text)) {
        ++stats_.disk_hits;
        return Open(*image, stem);
      }
      ++stats_.rejected_entries;
    }
    PGK_ASSIGN_OR_RETURN(std::string image, Compile(source, compiler, stem, headers));
    // The entry is replaced atomically: other processes read the old or the new one.
    (void)WriteFileAtomic(entry, FormatJitEntry(key_text, image));
    return Open(image, stem);
  }

  // dlopen of `image`, written to a private file first: the bytes loaded are exactly the bytes
  // checked, whatever happens to the cache entry meanwhile.
  static absl::StatusOr<void*> Open(const std::string& image, const std::string& stem) {
    std::string path = absl::StrCat(stem, ".", getpid(), ".XXXXXX");
    const int fd = mkstemp(path.data());
    if (fd < 0) {
      return RuntimeError(absl::StrCat("host jit: creating ", path, ": ", std::strerror(errno)));
    }
    size_t done = 0;
    while (done < image.size()) {
      const ssize_t n = write(fd, image.data() + done, image.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
    void* handle = done == image.size() ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    const char* why = done == image.size() ? dlerror() : "short write";
    std::error_code ec;
    fs::remove(path, ec);  // the mapping stays; the name is never reused while it does
    if (handle == nullptr) {
      return RuntimeError(absl::StrCat("host jit: loading ", path, ": ", why ? why : "?"));
    }
    return handle;
  }

  // Runs the compiler on `source`; the shared object's bytes.
  absl::StatusOr<std::string> Compile(const std::string& source, const std::string& compiler,
                                      const std::string& stem, uint64_t headers) {
    const std::string tmp = absl::StrCat(stem, ".", getpid(), ".tmp");
    PGK_RETURN_IF_ERROR(WriteFileAtomic(tmp + ".cc", source));
    // $CXX as the shell splits it (it may carry words: "ccache g++", "g++ -w").
    const std::string dir = stem.substr(0, stem.rfind('/'));
    const std::string cmd =
        absl::StrCat(compiler, " -std=c++17 -O2 -fPIC -shared -ffp-contract=off -I",
                     Quote(absl::StrFormat("%s/include-%016x", dir, headers)), " -o ",
                     Quote(tmp + ".so"), " ", Quote(tmp + ".cc"));
    const auto start = std::chrono::steady_clock::now();
    auto [status, output] = Run(cmd);
    ++stats_.compiles;
    stats_.compile_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::error_code ec;
    fs::remove(tmp + ".cc", ec);
    if (status != 0) {
      fs::remove(tmp + ".so", ec);
      if (status == -1 || WEXITSTATUS(status) == 127) {
        return NotImplementedError(
            absl::StrCat("host jit: the C++ compiler '", compiler,
                         "' does not run (set CXX to a C++17 compiler): ", output));
      }
      return RuntimeError(
          absl::StrCat("host jit: compiling with '", compiler, "' failed:\n", output));
    }
    absl::StatusOr<std::optional<std::string>> image = ReadSmallFile(tmp + ".so", kMaxEntryBytes);
    fs::remove(tmp + ".so", ec);
    if (!image.ok()) return image.status();
    if (!image->has_value()) {
      return RuntimeError(absl::StrCat("host jit: the compiler wrote no ", tmp, ".so"));
    }
    return std::move(**image);
  }

  static constexpr size_t kMaxEntryBytes = size_t{256} << 20;

  std::mutex mu_;
  std::string dir_;
  HostJitInfo stats_;
  std::map<std::string, void*> handles_;  // by source key; never unloaded
  // Symbols by compiler, symbol and caller key: repeated calls skip generating and hashing.
  absl::flat_hash_map<std::string, void*> symbols_;
};

HostJit& Jit() {
  static HostJit* jit = new HostJit;  // never destroyed: loaded code stays until exit
  return *jit;
}

}  // namespace

absl::StatusOr<void*> HostJitSymbol(absl::string_view key, absl::FunctionRef<std::string()> source,
                                    absl::string_view symbol) {
  return Jit().Symbol(key, source, symbol);
}

HostJitInfo HostJitStats() { return Jit().Stats(); }

absl::Status HostJitClear(bool disk) { return Jit().Clear(disk); }

}  // namespace pygpukit
