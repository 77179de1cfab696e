// JIT cache entries (runtime/jit/jit_cache.h): keys, the entry file format and its validation, and
// compile-log annotation. Pure logic: no GPU, no NVRTC.
#include "runtime/jit/jit_cache.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace pygpukit {
namespace {

JitSource Src(std::string source = "extern \"C\" __global__ void k() {}") {
  JitSource s;
  s.source = std::move(source);
  s.name = "k";
  return s;
}

TEST(JitCache, KeysDifferInEveryInput) {
  const JitSource base = Src();
  std::set<std::string> keys;
  keys.insert(JitKeyText(base, "sm_90", "13.0"));
  keys.insert(JitKeyText(base, "sm_80", "13.0"));
  keys.insert(JitKeyText(base, "sm_90", "12.8"));
  JitSource s = base;
  s.source += " ";
  keys.insert(JitKeyText(s, "sm_90", "13.0"));
  s = base;
  s.name = "other";
  keys.insert(JitKeyText(s, "sm_90", "13.0"));
  s = base;
  s.options = {"-DX=1"};
  keys.insert(JitKeyText(s, "sm_90", "13.0"));
  // Field lengths are part of the key: moving text between two options is another key.
  s.options = {"-DX=1", "-DY"};
  keys.insert(JitKeyText(s, "sm_90", "13.0"));
  s.options = {"-DX=1-DY"};
  keys.insert(JitKeyText(s, "sm_90", "13.0"));
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_EQ(JitKeyText(base, "sm_90", "13.0"), JitKeyText(Src(), "sm_90", "13.0"));
}

TEST(JitCache, HashIsStableAndNamesFiles) {
  // FNV-1a 64 reference values: the empty string and "a".
  EXPECT_EQ(JitHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(JitHash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(JitEntryFileName(""), "jit-cbf29ce484222325.bin");
  EXPECT_NE(JitEntryFileName("x"), JitEntryFileName("y"));
}

TEST(JitCache, EntryRoundTripsAnyBytes) {
  const std::string key = JitKeyText(Src("line1\nline2\n\0x"), "sm_90", "13.0");
  std::string image =
      "\x7f"
      "ELF";
  image.push_back('\0');
  image += std::string(1000, '\n') + "tail";
  const std::string file = FormatJitEntry(key, image);
  std::optional<std::string> got = ParseJitEntry(file, key);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, image);
  EXPECT_EQ(ParseJitEntry(FormatJitEntry(key, ""), key), std::optional<std::string>(""));
}

TEST(JitCache, DamagedOrForeignEntriesAreRejected) {
  const std::string key = JitKeyText(Src(), "sm_90", "13.0");
  const std::string image(300, 'i');
  const std::string file = FormatJitEntry(key, image);
  // Another key (a hash collision or a stale file under the same name).
  EXPECT_FALSE(ParseJitEntry(file, JitKeyText(Src(), "sm_80", "13.0")).has_value());
  // Every truncation, and trailing bytes.
  for (size_t n = 0; n < file.size(); ++n) {
    EXPECT_FALSE(ParseJitEntry(file.substr(0, n), key).has_value()) << n;
  }
  EXPECT_FALSE(ParseJitEntry(file + "x", key).has_value());
  // Any flipped byte: in the header, the key, the hash, the sizes or the image.
  for (size_t i = 0; i < file.size(); i += 7) {
    std::string bad = file;
    bad[i] ^= 0x20;
    EXPECT_FALSE(ParseJitEntry(bad, key).has_value()) << i;
  }
  EXPECT_FALSE(ParseJitEntry("", key).has_value());
  EXPECT_FALSE(ParseJitEntry("garbage", key).has_value());
  // Length fields near the size limits must not wrap around the bounds checks.
  const std::string magic = file.substr(0, file.find('\n') + 1);
  for (const char* n : {"18446744073709551615", "18446744073709551614", "9223372036854775808"}) {
    EXPECT_FALSE(ParseJitEntry(magic + "key=" + n + "\nabc", key).has_value()) << n;
    EXPECT_FALSE(ParseJitEntry(magic + "key=" + n + "\n", key).has_value()) << n;
  }
}

TEST(JitCache, ProgramNamesAreSanitized) {
  EXPECT_EQ(JitProgramName("my_kernel2"), "my_kernel2");
  EXPECT_EQ(JitProgramName("../evil name"), "___evil_name");
  EXPECT_EQ(JitProgramName(""), "kernel");
  EXPECT_EQ(JitProgramName(std::string(100, 'a')).size(), 64u);
}

TEST(JitCache, LogAnnotationShowsCitedLines) {
  const std::string source = "a\nb\nc\nd\ne\nf\ng";
  const std::string log =
      "k.cu(2): error: bad\nk.cu(6): warning: meh\nk.cu(99): error: past the end";
  const std::string out = JitAnnotateLog(log, "k", source);
  EXPECT_EQ(out.rfind(log, 0), 0u) << out;  // the log comes first, unchanged
  EXPECT_NE(out.find(">    2 | b"), std::string::npos) << out;
  EXPECT_NE(out.find("     1 | a"), std::string::npos) << out;
  EXPECT_NE(out.find("     3 | c"), std::string::npos) << out;
  EXPECT_NE(out.find(">    6 | f"), std::string::npos) << out;
  EXPECT_NE(out.find("     7 | g"), std::string::npos) << out;
  EXPECT_NE(out.find("   ..."), std::string::npos) << out;  // 4 is not shown
  EXPECT_EQ(out.find("4 | d"), std::string::npos) << out;
  // Other programs' citations and logs without any are left alone.
  EXPECT_EQ(JitAnnotateLog("x.cu(2): error", "k", source), "x.cu(2): error");
  EXPECT_EQ(JitAnnotateLog("", "k", source), "");
}

}  // namespace
}  // namespace pygpukit
