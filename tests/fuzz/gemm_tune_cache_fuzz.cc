// Fuzz target: the GEMM autotuner's cache file (gemm_tune_cache.h). Files are shared between
// processes and may be truncated, stale or garbage: parsing any text never fails hard, keeps
// only entries that parse, and what it keeps formats back to a file that parses to the same
// entries. Keys and choices parse exactly their own text forms.
//   Input: a header flag and the file's entry lines (or, first byte odd, the whole file).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_input.h"
#include "ops/gemm/gemm_tune_cache.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pygpukit::ops;
  pygpukit::fuzz::Input in(data, size);
  const uint8_t mode = in.Take<uint8_t>();
  TuneCacheHeader header;
  header.device_name = "fuzz";
  header.sm = 90;
  std::string text;
  if (mode & 1) {
    text = in.Rest();
  } else {
    text = TuneCacheHeaderLine(header) + "\n" + in.Rest();
  }
  const TuneFileContents parsed = ParseTuneCacheFile(text, header);
  // What was kept survives a write and a read back.
  const std::string again = FormatTuneCacheFile(header, parsed.entries);
  const TuneFileContents reread = ParseTuneCacheFile(again, header);
  Check(reread.entries.size() == parsed.entries.size());
  for (const auto& [key, entry] : parsed.entries) {
    auto it = reread.entries.find(key);
    Check(it != reread.entries.end());
    Check(it->second.choice == entry.choice);
    // Keys are kept in their canonical form.
    absl::StatusOr<TuneKey> k = ParseTuneKey(key);
    Check(k.ok() && TuneKeyText(*k) == key);
  }
  // Single fields: a parse succeeds only for text that formats back to itself.
  const std::string field = text.substr(0, text.find('\n'));
  if (absl::StatusOr<TuneKey> k = ParseTuneKey(field); k.ok()) Check(TuneKeyText(*k) == field);
  if (absl::StatusOr<TuneChoice> c = ParseTuneChoice(field); c.ok()) {
    Check(TuneChoiceText(*c) == field);
  }
  return 0;
}
