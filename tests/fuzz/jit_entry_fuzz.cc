// Fuzz target: JIT cache entries (the NVRTC cache's and the host compiler's, one format). A cache
// directory is untrusted input: whatever bytes a file holds, ParseJitEntry returns an image only
// for a complete, intact entry of exactly the requested key, and never reads past the file.
//   Input: key text, image, then how to damage the formatted entry (or, first byte odd, the raw
//   bytes as a file).
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "fuzz_input.h"
#include "runtime/jit/jit_cache.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pygpukit::fuzz::Input in(data, size);
  const uint8_t mode = in.Take<uint8_t>();
  const std::string key = in.Bytes(200);
  if (mode & 1) {  // arbitrary file contents
    const std::string file = in.Rest();
    std::optional<std::string> image = pygpukit::ParseJitEntry(file, key);
    if (image.has_value()) {
      // Only an entry that formats back to the same bytes is accepted.
      Check(pygpukit::FormatJitEntry(key, *image) == file);
    }
    return 0;
  }
  const std::string image = in.Bytes(255);
  const std::string entry = pygpukit::FormatJitEntry(key, image);
  std::optional<std::string> back = pygpukit::ParseJitEntry(entry, key);
  Check(back.has_value() && *back == image);  // the round trip holds
  // Damaged copies: truncated, a byte changed, bytes appended, another key asked for.
  std::string damaged = entry;
  const uint16_t at = in.Take<uint16_t>();
  switch (in.Take<uint8_t>() % 4) {
    case 0:
      damaged.resize(at % (entry.size() + 1));
      break;
    case 1:
      if (!damaged.empty())
        damaged[at % damaged.size()] ^= static_cast<char>(in.Take<uint8_t>() | 1);
      break;
    case 2:
      damaged += in.Bytes(64) + "x";
      break;
    default: {
      const std::string other = in.Bytes(200);
      back = pygpukit::ParseJitEntry(entry, other);
      Check(!back.has_value() || other == key);
      return 0;
    }
  }
  back = pygpukit::ParseJitEntry(damaged, key);
  Check(!back.has_value() || damaged == entry || *back == image);
  return 0;
}
