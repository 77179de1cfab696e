// The JIT engine (runtime/jit/jit.h) compiling with NVRTC, which needs no GPU: memory and disk
// cache hits, corrupt entries, compile errors, concurrent requests, clearing. Skipped where NVRTC
// cannot be loaded.
#include "runtime/jit/jit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "file_test_util.h"
#include "runtime/jit/cache_files.h"
#include "runtime/jit/jit_cache.h"
#include "test_util.h"

namespace pygpukit {
namespace {

namespace fs = std::filesystem;

class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const JitCacheInfo i = JitEngine(nullptr).info(); !i.nvrtc_available) {
      GTEST_SKIP() << "NVRTC is not available here: " << i.nvrtc_version;
    }
    dir_ = testing::FreshTestDir("pgk_jit");
    const char* old = std::getenv("PYGPUKIT_CACHE_DIR");
    if (old != nullptr) saved_ = old;
    had_ = old != nullptr;
    setenv("PYGPUKIT_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (had_) {
      setenv("PYGPUKIT_CACHE_DIR", saved_.c_str(), 1);
    } else {
      unsetenv("PYGPUKIT_CACHE_DIR");
    }
    fs::remove_all(dir_);
  }
  std::vector<fs::path> Entries() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir_ + "/jit", ec), end; !ec && it != end; it.increment(ec)) {
      out.push_back(it->path());
    }
    return out;
  }

  std::string dir_, saved_;
  bool had_ = false;
};

JitSource Add() {
  JitSource s;
  s.name = "add";
  s.source = R"(extern "C" __global__ void add(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
})";
  return s;
}

bool IsElf(const std::string& image) {
  return image.rfind(
             "\x7f"
             "ELF",
             0) == 0;
}

TEST_F(JitTest, CompilesOnceThenHitsMemoryAndDisk) {
  JitEngine jit(nullptr);
  ASSERT_OK_AND_ASSIGN(auto image, jit.Image(Add(), "sm_90"));
  EXPECT_TRUE(IsElf(*image));
  ASSERT_OK_AND_ASSIGN(auto again, jit.Image(Add(), "sm_90"));
  EXPECT_EQ(again.get(), image.get());
  JitCacheInfo i = jit.info();
  EXPECT_EQ(i.compiles, 1);
  EXPECT_EQ(i.memory_hits, 1);
  EXPECT_EQ(i.disk_writes, 1);
  EXPECT_EQ(i.memory_entries, 1);
  EXPECT_GT(i.compile_seconds, 0.0);
  EXPECT_EQ(i.directory, dir_ + "/jit");
  ASSERT_EQ(Entries().size(), 1u);

  // Another arch is another image; another engine (process) finds both on disk.
  ASSERT_OK_AND_ASSIGN(auto sm80, jit.Image(Add(), "sm_80"));
  EXPECT_NE(*sm80, *image);
  JitEngine fresh(nullptr);
  ASSERT_OK_AND_ASSIGN(auto from_disk, fresh.Image(Add(), "sm_90"));
  EXPECT_EQ(*from_disk, *image);
  EXPECT_EQ(fresh.info().disk_hits, 1);
  EXPECT_EQ(fresh.info().compiles, 0);
}

TEST_F(JitTest, CorruptEntriesAreRecompiledAndReplaced) {
  std::string good;
  {
    JitEngine jit(nullptr);
    ASSERT_OK_AND_ASSIGN(auto image, jit.Image(Add(), "sm_90"));
    good = *image;
  }
  ASSERT_EQ(Entries().size(), 1u);
  const fs::path entry = Entries()[0];
  for (const std::string& damage : {std::string("garbage"), std::string()}) {
    std::string text = testing::ReadAll(entry.string());
    if (damage.empty()) {
      text.resize(text.size() / 2);  // truncated
    } else {
      text.replace(text.size() - 40, damage.size(), damage);  // bytes of the image changed
    }
    testing::WriteAll(entry.string(), text);
    JitEngine jit(nullptr);
    ASSERT_OK_AND_ASSIGN(auto image, jit.Image(Add(), "sm_90"));
    EXPECT_EQ(*image, good);
    EXPECT_EQ(jit.info().rejected_entries, 1);
    EXPECT_EQ(jit.info().compiles, 1);
    JitEngine after(nullptr);  // the entry was rewritten whole
    ASSERT_OK(after.Image(Add(), "sm_90").status());
    EXPECT_EQ(after.info().disk_hits, 1);
  }
}

TEST_F(JitTest, CompileErrorsCarryTheLogAndAreNotCached) {
  JitEngine jit(nullptr);
  JitSource bad;
  bad.name = "broken";
  bad.source = "extern \"C\" __global__ void f(int* p) {\n  p[0] = not_declared;\n}\n";
  absl::Status st = jit.Image(bad, "sm_90").status();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ErrorTypeOf(st), ErrorType::kRuntime);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("broken.cu(2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not_declared"), std::string::npos) << msg;
  EXPECT_NE(msg.find(">    2 |   p[0] = not_declared;"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sm_90"), std::string::npos) << msg;
  EXPECT_EQ(jit.info().memory_entries, 0);
  EXPECT_TRUE(Entries().empty());
  // Bad options are compile errors too.
  JitSource opt = Add();
  opt.options = {"--no-such-option"};
  st = jit.Image(opt, "sm_90").status();
  EXPECT_EQ(ErrorTypeOf(st), ErrorType::kRuntime) << st;
  EXPECT_NE(std::string(st.message()).find("--no-such-option"), std::string::npos) << st;
}

TEST_F(JitTest, OptionsReachNvrtc) {
  JitEngine jit(nullptr);
  JitSource s;
  s.name = "opt";
  s.source =
      "#ifndef WIDTH\n#error WIDTH is not set\n#endif\n"
      "extern \"C\" __global__ void k(int* p) { p[0] = WIDTH; }\n";
  EXPECT_FALSE(jit.Image(s, "sm_90").ok());
  s.options = {"-DWIDTH=4"};
  EXPECT_OK(jit.Image(s, "sm_90").status());
}

TEST_F(JitTest, ConcurrentRequestsCompileOnce) {
  JitEngine jit(nullptr);
  std::vector<std::shared_ptr<const std::string>> images(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < images.size(); ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::shared_ptr<const std::string>> r = jit.Image(Add(), "sm_90");
      if (r.ok()) images[t] = *r;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& image : images) {
    ASSERT_NE(image, nullptr);
    EXPECT_EQ(image.get(), images[0].get());
  }
  EXPECT_EQ(jit.info().compiles, 1);
  EXPECT_EQ(jit.info().memory_hits, 7);
}

TEST_F(JitTest, ClearForgetsAndDeletes) {
  JitEngine jit(nullptr);
  ASSERT_OK(jit.Image(Add(), "sm_90").status());
  ASSERT_OK(jit.Clear(/*disk=*/false));
  EXPECT_EQ(jit.info().memory_entries, 0);
  EXPECT_EQ(Entries().size(), 1u);
  ASSERT_OK(jit.Image(Add(), "sm_90").status());
  EXPECT_EQ(jit.info().disk_hits, 1);
  ASSERT_OK(jit.Clear(/*disk=*/true));
  EXPECT_TRUE(Entries().empty());
  ASSERT_OK(jit.Image(Add(), "sm_90").status());
  EXPECT_EQ(jit.info().compiles, 2);
}

TEST_F(JitTest, AnUnwritableDirectoryOnlyCostsTheDiskCache) {
  fs::create_directories(dir_);
  testing::WriteAll(dir_ + "/jit", "a file where the directory should be");
  JitEngine jit(nullptr);
  ASSERT_OK_AND_ASSIGN(auto image, jit.Image(Add(), "sm_90"));
  EXPECT_TRUE(IsElf(*image));
  EXPECT_FALSE(jit.info().disk_error.empty());
  EXPECT_EQ(jit.info().disk_writes, 0);
}

TEST_F(JitTest, WithoutACacheDirectoryImagesStayInMemory) {
  const char* home = std::getenv("HOME");
  const std::string saved_home = home != nullptr ? home : "";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg != nullptr ? xdg : "";
  unsetenv("PYGPUKIT_CACHE_DIR");
  unsetenv("HOME");
  unsetenv("XDG_CACHE_HOME");
  JitEngine jit(nullptr);
  const bool ok = jit.Image(Add(), "sm_90").ok();
  const JitCacheInfo i = jit.info();
  if (home != nullptr) setenv("HOME", saved_home.c_str(), 1);
  if (xdg != nullptr) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  EXPECT_TRUE(ok);
  EXPECT_FALSE(i.disk_usable);
  EXPECT_EQ(i.disk_error, kNoCacheDirectory);
  EXPECT_TRUE(i.nvrtc_available);
  EXPECT_EQ(i.compiles, 1);
}

TEST_F(JitTest, SharedScalarHeadersCompileUnderNvrtc) {
  // The headers the CPU loops and nvcc kernels are built from reach NVRTC unchanged (embedded,
  // with stand-ins for <cstdint> and friends): casts between every storage type, and the
  // arithmetic ops on each kind.
  JitSource s;
  s.name = "shared";
  s.source = R"(#include "ops/kernels/elementwise.h"
#include "ops/gemm/gemm_epilogue.h"
using namespace pygpukit;
using namespace pygpukit::kernels;
template <typename A, typename B>
__device__ void CastBoth(const ElementwiseParams& p, long long i) {
  static_cast<B*>(p.out)[i] = Cast<B>(static_cast<const A*>(p.a)[i]);
  static_cast<A*>(p.out)[i] = Cast<A>(static_cast<const B*>(p.a)[i]);
}
template <typename T>
__device__ void Arith(const ElementwiseParams& p, long long i) {
  BinaryElement<AddOp, T>(p, i);
  BinaryElement<SubOp, T>(p, i);
  BinaryElement<MulOp, T>(p, i);
  UnaryElement<NegOp, T>(p, i);
  // Integers divide in floating point (the op layer promotes them first).
  if constexpr (!std::is_integral_v<T>) BinaryElement<DivOp, T>(p, i);
}
extern "C" __global__ void all(ElementwiseParams p) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= p.n) return;
  CastBoth<float16, bfloat16>(p, i);
  CastBoth<double, float16>(p, i);
  CastBoth<int64_t, bfloat16>(p, i);
  CastBoth<uint64_t, float>(p, i);
  CastBoth<bool, Complex<double>>(p, i);
  CastBoth<int8_t, Complex<float>>(p, i);
  Arith<float16>(p, i);
  Arith<bfloat16>(p, i);
  Arith<float>(p, i);
  Arith<double>(p, i);
  Arith<int32_t>(p, i);
  Arith<uint8_t>(p, i);
  Arith<Complex<float>>(p, i);
  Arith<Complex<double>>(p, i);
})";
  JitEngine jit(nullptr);
  absl::StatusOr<std::shared_ptr<const std::string>> image = jit.Image(s, "sm_90");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_TRUE(IsElf(**image));
}

TEST_F(JitTest, FunctionsNeedACudaBackend) {
  JitEngine jit(nullptr);
  EXPECT_EQ(ErrorTypeOf(jit.Function(Add(), "add", 0).status()), ErrorType::kNotImplemented);
}

}  // namespace
}  // namespace pygpukit
