// The GEMM tune cache (ops/gemm/gemm_tune_cache.h) and the autotuning switch (ops/gemm/gemm_tune.h): key
// and choice text forms, the cache file format and its invalidation, paths, atomic writes and
// the thread-safe per-device cache. Pure logic and files: runs without a GPU.
#include "ops/gemm/gemm_tune_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "file_test_util.h"
#include "ops/gemm/gemm_tune.h"
#include "runtime/jit/cache_files.h"
#include "test_util.h"

namespace pygpukit::ops {
namespace {

namespace fs = std::filesystem;

std::string TestDir() { return testing::FreshTestDir("pgk_tune"); }

using testing::ReadAll;
using testing::WriteAll;

TuneKey Key(int64_t m = 1024) {
  TuneKey k;
  k.in = DType::BFloat16;
  k.out = DType::BFloat16;
  k.m = m;
  k.n = 512;
  k.k = 256;
  k.batch = 1;
  k.a = TuneLayout::kKMajor;
  k.b = TuneLayout::kMNMajor;
  k.aligned16 = true;
  return k;
}

TuneCacheHeader Header() {
  TuneCacheHeader h;
  h.pygpukit_version = "0.1.0";
  h.device_name = "NVIDIA H100 80GB HBM3";
  h.sm = 90;
  h.driver_version = 13000;
  h.cublaslt_version = "130000";
  h.kernel_archs = "90a";
  return h;
}

TuneEntry Entry(GemmFamily f, int bn = 0, int cluster = 0, double us = 12.5) {
  return TuneEntry{TuneChoice{f, bn, cluster}, us};
}

// ---- keys ----

TEST(GemmTuneKey, TextIsStable) {
  // Cache files written by earlier processes are keyed by this exact text.
  EXPECT_EQ(TuneKeyText(Key()),
            "in=bfloat16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,fused=0,align=16");
  TuneKey k;
  k.in = DType::Float32;
  k.out = DType::Float32;
  k.tf32 = true;
  k.m = 7;
  k.n = 3;
  k.k = 5;
  k.batch = 4;
  k.a = TuneLayout::kMNMajor;
  k.b = TuneLayout::kOther;
  k.fused = true;
  k.aligned16 = false;
  EXPECT_EQ(TuneKeyText(k),
            "in=float32,out=float32,tf32=1,m=7,n=3,k=5,batch=4,a=m,b=x,fused=1,align=any");
}

TEST(GemmTuneKey, RoundTrips) {
  for (DType in : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (TuneLayout a : {TuneLayout::kKMajor, TuneLayout::kMNMajor, TuneLayout::kOther}) {
      for (TuneLayout b : {TuneLayout::kKMajor, TuneLayout::kMNMajor, TuneLayout::kOther}) {
        for (bool fused : {false, true}) {
          TuneKey k = Key(int64_t{1} << 40);
          k.in = in;
          k.out = in == DType::Float64 ? in : DType::Float32;
          k.tf32 = in == DType::Float32 && fused;
          k.a = a;
          k.b = b;
          k.fused = fused;
          k.aligned16 = !fused;
          ASSERT_OK_AND_ASSIGN(TuneKey back, ParseTuneKey(TuneKeyText(k)));
          EXPECT_EQ(back, k) << TuneKeyText(k);
        }
      }
    }
  }
}

TEST(GemmTuneKey, RejectsAnythingButTheCanonicalForm) {
  const std::string good = TuneKeyText(Key());
  ASSERT_OK(ParseTuneKey(good));
  for (const std::string bad : {
           std::string(""),
           good + ",",
           good + ",extra=1",
           good.substr(0, good.size() - 3),  // truncated
           std::string("out=bfloat16,in=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),  // reordered
           std::string("in=bf16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,fused=0,"
                       "align=16"),  // an alias, not the name written
           std::string("in=int32,out=int32,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,fused=0,"
                       "align=16"),
           std::string("in=float8,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=2,m=1024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=01024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=0,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=-4,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=n,b=n,"
                       "fused=0,align=16"),  // 'n' is B's letter
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=m,"
                       "fused=0,align=16"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=8"),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=1024,n=512,k=256,batch=1,a=k,b=n,"
                       "fused=0,align=16 "),
           std::string("in=bfloat16,out=bfloat16,tf32=0,m=99999999999999999999,n=512,k=256,"
                       "batch=1,a=k,b=n,fused=0,align=16"),
       }) {
    absl::StatusOr<TuneKey> k = ParseTuneKey(bad);
    EXPECT_FALSE(k.ok()) << "accepted '" << bad << "'";
    if (!k.ok()) EXPECT_EQ(ErrorTypeOf(k.status()), ErrorType::kValue);
  }
}

TEST(GemmTuneKey, LayoutClasses) {
  EXPECT_EQ(TuneLayoutOfA(256, 1), TuneLayout::kKMajor);   // row-major A
  EXPECT_EQ(TuneLayoutOfA(1, 128), TuneLayout::kMNMajor);  // transposed view
  EXPECT_EQ(TuneLayoutOfA(1, 1), TuneLayout::kKMajor);     // a vector: K-major wins
  EXPECT_EQ(TuneLayoutOfA(512, 2), TuneLayout::kOther);
  EXPECT_EQ(TuneLayoutOfB(1, 256), TuneLayout::kKMajor);  // B^T row-major
  EXPECT_EQ(TuneLayoutOfB(512, 1), TuneLayout::kMNMajor);
  EXPECT_EQ(TuneLayoutOfB(1, 1), TuneLayout::kKMajor);
  EXPECT_EQ(TuneLayoutOfB(-512, 1), TuneLayout::kMNMajor);
  EXPECT_EQ(TuneLayoutOfB(4, 4), TuneLayout::kOther);
}

TEST(GemmTuneKey, Rows16Alignment) {
  alignas(64) static char buf[256];
  EXPECT_TRUE(Rows16Aligned(buf, 2, {1024, 1, 0}));
  EXPECT_TRUE(Rows16Aligned(buf, 2, {-8, 1}));  // negative strides by magnitude
  EXPECT_TRUE(Rows16Aligned(buf, 4, {4, 1, 12}));
  EXPECT_FALSE(Rows16Aligned(buf + 2, 2, {1024, 1}));  // base not 16-byte aligned
  EXPECT_FALSE(Rows16Aligned(buf, 2, {1000 + 4, 1}));  // 2008 bytes per row
  EXPECT_FALSE(Rows16Aligned(buf, 2, {1024, 1, 12}));  // batch stride of 24 bytes
  EXPECT_FALSE(Rows16Aligned(buf, 8, {3, 1}));
  EXPECT_TRUE(Rows16Aligned(buf, 8, {2, 1}));
}

// ---- choices ----

TEST(GemmTuneChoice, RoundTrips) {
  for (const TuneChoice& c :
       {TuneChoice{GemmFamily::kSm90, 128, 1}, TuneChoice{GemmFamily::kSm90, 256, 1},
        TuneChoice{GemmFamily::kSm90, 256, 2}, TuneChoice{GemmFamily::kSm80, 0, 0},
        TuneChoice{GemmFamily::kSimt, 0, 0}, TuneChoice{GemmFamily::kCublasLt, 0, 0}}) {
    ASSERT_OK_AND_ASSIGN(TuneChoice back, ParseTuneChoice(TuneChoiceText(c)));
    EXPECT_EQ(back, c) << TuneChoiceText(c);
  }
  EXPECT_EQ(TuneChoiceText({GemmFamily::kSm90, 256, 2}), "sm90:256:2");
  EXPECT_EQ(TuneChoiceText({GemmFamily::kCublasLt, 0, 0}), "cublaslt");
}

TEST(GemmTuneChoice, RejectsBadStrings) {
  for (const char* bad :
       {"",           "sm90",       "sm90:256", "sm90:256:2:1", "sm90:64:1",   "sm90:128:2",
        "sm90:256:3", "sm90:256:0", "sm90:0:0", "sm90:0256:2",  "sm90:+256:2", "sm90:256:2 ",
        "SM80",       "sm80:128:1", "simt ",    "cublas",       "cuBLASLt",    "sm91:256:2",
        "auto",       "sm90:-256:2"}) {
    absl::StatusOr<TuneChoice> c = ParseTuneChoice(bad);
    EXPECT_FALSE(c.ok()) << "accepted '" << bad << "'";
    if (!c.ok()) {
      EXPECT_EQ(ErrorTypeOf(c.status()), ErrorType::kValue);
      EXPECT_NE(c.status().message().find("bad choice"), std::string::npos) << c.status();
    }
  }
}

// ---- file format ----

TuneEntries SomeEntries() {
  TuneEntries e;
  e[TuneKeyText(Key(1024))] = Entry(GemmFamily::kSm90, 256, 2, 41.25);
  e[TuneKeyText(Key(64))] = Entry(GemmFamily::kCublasLt, 0, 0, 3.5);
  TuneKey f = Key(300);
  f.fused = true;
  f.out = DType::Float32;
  e[TuneKeyText(f)] = Entry(GemmFamily::kSm80, 0, 0, 17.0);
  return e;
}

TEST(GemmTuneFile, RoundTrips) {
  const TuneEntries entries = SomeEntries();
  const std::string text = FormatTuneCacheFile(Header(), entries);
  TuneFileContents c = ParseTuneCacheFile(text, Header());
  EXPECT_EQ(c.status, TuneFileStatus::kLoaded);
  EXPECT_EQ(c.skipped_lines, 0);
  EXPECT_EQ(c.entries, entries);
  // Written in key order, one line per entry after the header, times with 3 decimals.
  EXPECT_EQ(text.substr(0, text.find('\n')), TuneCacheHeaderLine(Header()));
  EXPECT_NE(text.find(" sm90:256:2 41.250\n"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + static_cast<long>(entries.size()));
}

TEST(GemmTuneFile, HeaderLineNamesEveryVersion) {
  EXPECT_EQ(TuneCacheHeaderLine(Header()),
            "pygpukit-gemm-tune\tformat=2\tpygpukit=0.1.0\tdevice=NVIDIA H100 80GB HBM3\tsm=90\t"
            "driver=13000\tcublaslt=130000\tkernels=90a");
  TuneCacheHeader h = Header();
  h.device_name = "weird\tname\nwith breaks";
  const std::string line = TuneCacheHeaderLine(h);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("device=weird name with breaks\t"), std::string::npos) << line;
}

TEST(GemmTuneFile, AnyVersionMismatchInvalidatesTheWholeFile) {
  const std::string text = FormatTuneCacheFile(Header(), SomeEntries());
  std::vector<TuneCacheHeader> others(7, Header());
  others[0].format = kTuneCacheFormat + 1;
  others[1].pygpukit_version = "0.2.0";
  others[2].device_name = "NVIDIA H200";
  others[3].sm = 100;
  others[4].driver_version = 13010;
  others[5].cublaslt_version = "130100";
  others[6].kernel_archs = "80;90a";
  for (const TuneCacheHeader& running : others) {
    TuneFileContents c = ParseTuneCacheFile(text, running);
    EXPECT_EQ(c.status, TuneFileStatus::kVersionMismatch) << TuneCacheHeaderLine(running);
    EXPECT_TRUE(c.entries.empty());
  }
  // A header alone, without its newline, is a torn write: nothing is trusted.
  EXPECT_EQ(ParseTuneCacheFile(TuneCacheHeaderLine(Header()), Header()).status,
            TuneFileStatus::kVersionMismatch);
}

TEST(GemmTuneFile, ForeignTextIsNotACacheFile) {
  for (const std::string text : {std::string(""), std::string("hello\n"),
                                 std::string("\x7f"
                                             "ELF\x02\x01\x01\0\0\0",
                                             10),
                                 std::string("pygpukit-gemm-tunes\tformat=1\n")}) {
    TuneFileContents c = ParseTuneCacheFile(text, Header());
    EXPECT_EQ(c.status, TuneFileStatus::kNotACacheFile);
    EXPECT_TRUE(c.entries.empty());
  }
}

TEST(GemmTuneFile, CorruptAndTruncatedLinesAreSkipped) {
  const std::string k1 = TuneKeyText(Key(1024)), k2 = TuneKeyText(Key(2048));
  std::string text = TuneCacheHeaderLine(Header()) + "\n";
  text += k1 + " sm90:256:2 40.000\n";  // good
  text += "\n";                         // blank lines are not entries
  const std::vector<std::string> bad = {
      k1 + " sm90:64:1 40.000",       // a configuration that is not built
      k1 + " sm91 40.000",            // unknown family
      k1 + " sm90:256:2",             // no time
      k1 + " sm90:256:2 40.0 extra",  // extra field
      k1 + "  sm90:256:2 40.0",       // double space
      k1 + " sm90:256:2 nan",         // not a time
      k1 + " sm90:256:2 inf",
      k1 + " sm90:256:2 -1",
      k1 + " sm90:256:2 0",
      k1 + " sm90:256:2 fast",
      k1.substr(0, 30) + " sm80 10.0",  // a truncated key
      "garbage",
      std::string("\x01\x02\xff binary \x00 junk", 17),
  };
  for (const std::string& line : bad) text += line + "\n";
  text += k2 + " cublaslt 7.500\n";  // good
  text += k1 + " simt 9.0";          // last line without its newline: truncated
  TuneFileContents c = ParseTuneCacheFile(text, Header());
  EXPECT_EQ(c.status, TuneFileStatus::kLoaded);
  EXPECT_EQ(c.skipped_lines, static_cast<int64_t>(bad.size()) + 1);
  TuneEntries want;
  want[k1] = Entry(GemmFamily::kSm90, 256, 2, 40.0);
  want[k2] = Entry(GemmFamily::kCublasLt, 0, 0, 7.5);
  EXPECT_EQ(c.entries, want);
}

TEST(GemmTuneFile, LastDuplicateWins) {
  const std::string k = TuneKeyText(Key());
  const std::string text =
      TuneCacheHeaderLine(Header()) + "\n" + k + " sm80 10.0\n" + k + " cublaslt 8.0\n";
  TuneFileContents c = ParseTuneCacheFile(text, Header());
  ASSERT_EQ(c.entries.size(), 1u);
  EXPECT_EQ(c.entries[k], Entry(GemmFamily::kCublasLt, 0, 0, 8.0));
}

// ---- paths ----

TEST(GemmTunePaths, FileNameIsSanitized) {
  EXPECT_EQ(TuneCacheFileName("NVIDIA H100 80GB HBM3", 90),
            "gemm-tune-NVIDIA-H100-80GB-HBM3-sm90.txt");
  EXPECT_EQ(TuneCacheFileName("NVIDIA GeForce RTX 4090", 89),
            "gemm-tune-NVIDIA-GeForce-RTX-4090-sm89.txt");
  const std::string evil = TuneCacheFileName("../../etc/passwd", 90);
  EXPECT_EQ(evil.find('/'), std::string::npos) << evil;
  EXPECT_EQ(evil, "gemm-tune-..-..-etc-passwd-sm90.txt");
  EXPECT_EQ(TuneCacheFileName("", 80), "gemm-tune-device-sm80.txt");
  EXPECT_EQ(TuneCacheFileName("..", 80), "gemm-tune-device-sm80.txt");
  EXPECT_LE(TuneCacheFileName(std::string(1000, 'a'), 90).size(), 120u);
}

// ---- the cache ----

TEST(GemmTuneCacheTest, StoresPersistAcrossInstances) {
  const std::string path = TestDir() + "/sub/gemm-tune.txt";
  const std::string k1 = TuneKeyText(Key(1024)), k2 = TuneKeyText(Key(64));
  {
    GemmTuneCache cache;
    cache.Load(Header(), path);
    EXPECT_EQ(cache.stats().file_status, TuneFileStatus::kMissing);
    EXPECT_FALSE(cache.Lookup(k1).has_value());
    cache.Store(k1, Entry(GemmFamily::kSm90, 128, 1, 20.0));
    ASSERT_EQ(cache.Lookup(k1), Entry(GemmFamily::kSm90, 128, 1, 20.0));
    TuneCacheStats s = cache.stats();
    EXPECT_EQ(s.path, path);
    EXPECT_TRUE(s.loaded);
    EXPECT_TRUE(s.disk_usable) << s.disk_error;
    EXPECT_EQ(s.entries, 1);
    EXPECT_EQ(s.hits, 1);
    EXPECT_EQ(s.misses, 1);
    EXPECT_EQ(s.tuned, 1);
  }
  GemmTuneCache again;  // another process, later
  again.Load(Header(), path);
  EXPECT_EQ(again.stats().file_status, TuneFileStatus::kLoaded);
  EXPECT_EQ(again.Lookup(k1), Entry(GemmFamily::kSm90, 128, 1, 20.0));
  EXPECT_FALSE(again.Lookup(k2).has_value());
  TuneCacheStats s = again.stats();
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.tuned, 0);
}

TEST(GemmTuneCacheTest, SavesKeepOtherProcessesEntries) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  GemmTuneCache a, b;
  a.Load(Header(), path);
  b.Load(Header(), path);  // both start from an empty file
  a.Store("in=bfloat16,out=bfloat16,tf32=0,m=1,n=1,k=1,batch=1,a=k,b=k,fused=0,align=16",
          Entry(GemmFamily::kSm80));
  b.Store(TuneKeyText(Key()), Entry(GemmFamily::kCublasLt));
  TuneFileContents c = ParseTuneCacheFile(ReadAll(path), Header());
  EXPECT_EQ(c.entries.size(), 2u);
}

TEST(GemmTuneCacheTest, OtherVersionFileIsIgnoredThenRewritten) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  TuneCacheHeader old = Header();
  old.driver_version = 12040;
  WriteAll(path, FormatTuneCacheFile(old, SomeEntries()));
  GemmTuneCache cache;
  cache.Load(Header(), path);
  EXPECT_EQ(cache.stats().file_status, TuneFileStatus::kVersionMismatch);
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_FALSE(cache.Lookup(TuneKeyText(Key(1024))).has_value());
  cache.Store(TuneKeyText(Key()), Entry(GemmFamily::kSm80));
  TuneFileContents c = ParseTuneCacheFile(ReadAll(path), Header());
  EXPECT_EQ(c.status, TuneFileStatus::kLoaded);
  ASSERT_EQ(c.entries.size(), 1u);  // the stale entries are gone
  EXPECT_EQ(c.entries.begin()->first, TuneKeyText(Key()));
}

TEST(GemmTuneCacheTest, CorruptFileIsSkippedNotFatal) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  WriteAll(path, TuneCacheHeaderLine(Header()) + "\n" + TuneKeyText(Key()) +
                     " sm90:512:4 1.0\ngarbage\n" + TuneKeyText(Key(64)) + " sm80 2.0\n");
  GemmTuneCache cache;
  cache.Load(Header(), path);
  TuneCacheStats s = cache.stats();
  EXPECT_EQ(s.file_status, TuneFileStatus::kLoaded);
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.skipped_lines, 2);
  EXPECT_TRUE(s.disk_usable);
}

TEST(GemmTuneCacheTest, UnwritableDirectoryMeansMemoryOnly) {
  const std::string dir = TestDir();
  WriteAll(dir + "/file", "x");
  GemmTuneCache cache;
  cache.Load(Header(), dir + "/file/sub/gemm-tune.txt");
  EXPECT_TRUE(cache.stats().disk_usable);  // a missing file is normal
  cache.Store(TuneKeyText(Key()), Entry(GemmFamily::kSm80));
  TuneCacheStats s = cache.stats();
  EXPECT_FALSE(s.disk_usable);
  EXPECT_NE(s.disk_error.find("cannot create"), std::string::npos) << s.disk_error;
  EXPECT_EQ(cache.Lookup(TuneKeyText(Key())), Entry(GemmFamily::kSm80));
  cache.Store(TuneKeyText(Key(64)), Entry(GemmFamily::kSimt));  // no retry, no error
  EXPECT_EQ(cache.stats().entries, 2);
  EXPECT_EQ(cache.stats().tuned, 2);

  GemmTuneCache nowhere;  // no directory could be determined
  nowhere.Load(Header(), "");
  EXPECT_FALSE(nowhere.stats().disk_usable);
  EXPECT_EQ(nowhere.stats().disk_error, kNoCacheDirectory);
  nowhere.Store(TuneKeyText(Key()), Entry(GemmFamily::kSm80));
  EXPECT_TRUE(nowhere.Lookup(TuneKeyText(Key())).has_value());
}

TEST(GemmTuneCacheTest, UnreadableFileMeansMemoryOnly) {
  const std::string dir = TestDir();
  fs::create_directories(dir + "/gemm-tune.txt");  // a directory where the file should be
  GemmTuneCache cache;
  cache.Load(Header(), dir + "/gemm-tune.txt");
  TuneCacheStats s = cache.stats();
  EXPECT_EQ(s.file_status, TuneFileStatus::kUnreadable);
  EXPECT_FALSE(s.disk_usable);
  cache.Store(TuneKeyText(Key()), Entry(GemmFamily::kSm80));
  EXPECT_TRUE(cache.Lookup(TuneKeyText(Key())).has_value());
}

TEST(GemmTuneCacheTest, UntunableKeysStayInMemoryUntilClear) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  GemmTuneCache cache;
  cache.Load(Header(), path);
  const std::string key = TuneKeyText(Key());
  EXPECT_FALSE(cache.Untunable(key));
  cache.MarkUntunable(key);
  EXPECT_TRUE(cache.Untunable(key));
  EXPECT_FALSE(cache.Lookup(key).has_value());  // not an entry, and never written
  EXPECT_FALSE(fs::exists(path));
  ASSERT_OK(cache.Clear(false));
  EXPECT_FALSE(cache.Untunable(key));
}

TEST(GemmTuneCacheTest, ClearForgetsMemoryAndOptionallyTheFile) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  GemmTuneCache cache;
  cache.Load(Header(), path);
  cache.Store(TuneKeyText(Key()), Entry(GemmFamily::kSm80));
  ASSERT_OK(cache.Clear(false));
  TuneCacheStats s = cache.stats();
  EXPECT_FALSE(s.loaded);
  EXPECT_EQ(s.entries, 0);
  EXPECT_EQ(s.tuned, 0);
  EXPECT_TRUE(fs::exists(path));
  cache.Load(Header(), path);  // read again: the disk entry comes back
  EXPECT_EQ(cache.stats().entries, 1);
  ASSERT_OK(cache.Clear(true));
  EXPECT_FALSE(fs::exists(path));
  cache.Load(Header(), path);
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_EQ(cache.stats().file_status, TuneFileStatus::kMissing);
  ASSERT_OK(cache.Clear(true));  // nothing to delete is fine
}

TEST(GemmTuneCacheTest, ConcurrentStoresAndLookupsKeepTheFileWhole) {
  const std::string path = TestDir() + "/gemm-tune.txt";
  GemmTuneCache cache;
  cache.Load(Header(), path);
  constexpr int kThreads = 4, kPerThread = 12;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string key = TuneKeyText(Key(1 + t * kPerThread + i));
        cache.Lookup(key);
        cache.Store(key, Entry(GemmFamily::kSm90, 256, 2, 1.0 + i));
        cache.Lookup(TuneKeyText(Key(1 + ((t + 1) % kThreads) * kPerThread + i)));
      }
    });
  }
  for (auto& th : threads) th.join();
  TuneCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, kThreads * kPerThread);
  EXPECT_EQ(s.tuned, kThreads * kPerThread);
  EXPECT_EQ(s.hits + s.misses, 2 * kThreads * kPerThread);
  TuneFileContents c = ParseTuneCacheFile(ReadAll(path), Header());
  EXPECT_EQ(c.status, TuneFileStatus::kLoaded);
  EXPECT_EQ(c.skipped_lines, 0);
  EXPECT_EQ(c.entries.size(), static_cast<size_t>(kThreads * kPerThread));
}

// ---- the switch and the registry (gemm_tune.h) ----

TEST(GemmTuneSwitch, SetAndQuery) {
  const bool before = GemmAutotuneEnabled();
  SetGemmAutotune(true);
  EXPECT_TRUE(GemmAutotuneEnabled());
  SetGemmAutotune(false);
  EXPECT_FALSE(GemmAutotuneEnabled());
  SetGemmAutotune(before);
}

TEST(GemmTuneSwitch, CpuInfoIsInertAndClearIsHarmless) {
  const std::string dir = TestDir();
  setenv("PYGPUKIT_CACHE_DIR", dir.c_str(), 1);
  ASSERT_OK_AND_ASSIGN(GemmTuneInfo info, GemmTuneCacheInfo(Device{DeviceType::kCPU, 0}));
  EXPECT_EQ(info.directory, dir);
  EXPECT_EQ(info.enabled, GemmAutotuneEnabled());
  EXPECT_EQ(info.cache.path, "");
  EXPECT_EQ(info.cache.entries, 0);
  EXPECT_FALSE(info.cache.disk_usable);
  EXPECT_OK(ClearGemmTuneCache(false));
  EXPECT_OK(ClearGemmTuneCache(true));
  EXPECT_FALSE(GemmTuneCacheFor(Device{DeviceType::kCPU, 0}).ok());
  unsetenv("PYGPUKIT_CACHE_DIR");
  EXPECT_TRUE(fs::is_empty(dir));
}

}  // namespace
}  // namespace pygpukit::ops
