// File helpers for the C++ tests of on-disk caches: a fresh directory per test, whole-file
// reads and writes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace pygpukit::testing {

/// An empty directory named after `prefix`, the process and the running test.
inline std::string FreshTestDir(const std::string& prefix) {
  namespace fs = std::filesystem;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path p =
      fs::path(::testing::TempDir()) /
      absl::StrCat(prefix, "_", getpid(), "_", info->test_suite_name(), "_", info->name());
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

/// The whole file at `path` ("" when it cannot be read).
inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Replaces the file at `path` with `text`.
inline void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

}  // namespace pygpukit::testing
