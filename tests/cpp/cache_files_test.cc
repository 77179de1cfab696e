// Cache file helpers (runtime/jit/cache_files.h): the cache directory from the environment, atomic
// replacement and bounded reads.
#include "runtime/jit/cache_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "file_test_util.h"
#include "test_util.h"

namespace pygpukit {
namespace {

namespace fs = std::filesystem;

std::string TestDir() { return testing::FreshTestDir("pgk_files"); }

using testing::ReadAll;
using testing::WriteAll;

TEST(CacheFiles, DirectoryFromEnvironment) {
  auto with = [](std::map<std::string, std::string> env) {
    return CacheDirectory([env](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_EQ(with({{"PYGPUKIT_CACHE_DIR", "/x/cache"}, {"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/h"}}),
            "/x/cache");
  EXPECT_EQ(with({{"PYGPUKIT_CACHE_DIR", ""}, {"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/h"}}),
            "/xdg/pygpukit");
  EXPECT_EQ(with({{"XDG_CACHE_HOME", "relative/xdg"}, {"HOME", "/h"}}), "/h/.cache/pygpukit");
  EXPECT_EQ(with({{"HOME", "/home/u"}}), "/home/u/.cache/pygpukit");
  EXPECT_EQ(with({}), "");
}

TEST(CacheFiles, AtomicWriteCreatesTheDirectoryAndReplaces) {
  const std::string dir = TestDir();
  const std::string path = dir + "/a/b/cache.txt";
  ASSERT_OK(WriteFileAtomic(path, "first\n"));
  EXPECT_EQ(ReadAll(path), "first\n");
  ASSERT_OK(WriteFileAtomic(path, "second\n"));
  EXPECT_EQ(ReadAll(path), "second\n");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir + "/a/b")) {
    ++files;
    EXPECT_EQ(e.path().filename(), "cache.txt");  // no temporaries left behind
  }
  EXPECT_EQ(files, 1);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> text, ReadSmallFile(path, 1 << 20));
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "second\n");
}

TEST(CacheFiles, FailuresAreStatuses) {
  const std::string dir = TestDir();
  WriteAll(dir + "/file", "not a directory");
  // A path below a regular file cannot be created, whoever runs the test (root included).
  absl::Status st = WriteFileAtomic(dir + "/file/sub/cache.txt", "x");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(ErrorTypeOf(st), ErrorType::kRuntime);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> missing,
                       ReadSmallFile(dir + "/missing.txt", 1 << 20));
  EXPECT_FALSE(missing.has_value());
  EXPECT_FALSE(ReadSmallFile(dir, 1 << 20).ok());  // a directory
  WriteAll(dir + "/big", std::string(4096, 'x'));
  EXPECT_FALSE(ReadSmallFile(dir + "/big", 1024).ok());
}

}  // namespace
}  // namespace pygpukit
