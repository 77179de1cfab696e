// The JIT families' kernel cache in front of the JitEngine (ops/launch/jit_kernel_cache.h): the
// per-thread table of recent hits must never hand out another key's or another cache's entry,
// keys too long for it go to the shared map, failed builds are not kept, and threads agree.
#include "ops/launch/jit_kernel_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit::ops {
namespace {

struct Entry {
  int value = 0;
};

// A cache at an address no other test's cache had: the per-thread table trusts its entries by
// the cache's address, and the library's caches live for the process (never freed, never
// reused), so tests keep theirs until exit too.
JitKernelCache<Entry>& NewCache() {
  static auto* caches = new std::vector<std::unique_ptr<JitKernelCache<Entry>>>;
  return *caches->emplace_back(std::make_unique<JitKernelCache<Entry>>());
}

// Gets `key`, building value `v` on a miss and counting builds.
absl::StatusOr<Entry> GetOrBuild(JitKernelCache<Entry>& cache, absl::string_view key, int v,
                                 int* builds) {
  return cache.Get(key, [&]() -> absl::StatusOr<Entry> {
    ++*builds;
    return Entry{v};
  });
}

TEST(JitKernelCache, BuildsOnceAndReturnsEachKeysOwnEntry) {
  JitKernelCache<Entry>& cache = NewCache();
  int builds = 0;
  // More keys than the per-thread table has slots, so some share a slot and evict each other.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<Entry> e = GetOrBuild(cache, absl::StrCat("key", i), i, &builds);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->value, i);
    }
  }
  EXPECT_EQ(builds, 100);
}

TEST(JitKernelCache, KeysDifferingInOneByteOrInLengthAreDistinct) {
  JitKernelCache<Entry>& cache = NewCache();
  int builds = 0;
  // Pairs of a key and its extension by one byte, and keys differing in one byte: among 64 of
  // each, several pairs share a slot of the per-thread table, where only the lengths or that
  // byte tell them apart.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 64; ++i) {
      const std::string a = absl::StrCat("key-", i, "-padding");
      std::string b = a;
      b[2] = 'Y';
      const std::string c = a + '\0';
      EXPECT_EQ(GetOrBuild(cache, c, 3 * i + 2, &builds)->value, 3 * i + 2);
      EXPECT_EQ(GetOrBuild(cache, a, 3 * i, &builds)->value, 3 * i);
      EXPECT_EQ(GetOrBuild(cache, b, 3 * i + 1, &builds)->value, 3 * i + 1);
      EXPECT_EQ(GetOrBuild(cache, c, 3 * i + 2, &builds)->value, 3 * i + 2);
    }
  }
  EXPECT_EQ(builds, 3 * 64);
}

TEST(JitKernelCache, KeysAreComparedWhole) {
  JitKernelCache<Entry>& cache = NewCache();
  int builds = 0;
  // More keys than the per-thread table has slots (so at least two share one), long ones
  // (user kernels carry their source) sharing a 200-byte prefix, of one length and of others.
  const std::string prefix(200, 'k');
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back(absl::StrCat(prefix, i));
  for (int i = 0; i < 20; ++i) keys.push_back(absl::StrCat(prefix, i, std::string(i + 1, 'z')));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < keys.size(); ++i) {
      absl::StatusOr<Entry> e = GetOrBuild(cache, keys[i], static_cast<int>(i), &builds);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->value, static_cast<int>(i)) << keys[i].substr(200);
    }
  }
  EXPECT_EQ(builds, static_cast<int>(keys.size()));
}

TEST(JitKernelCache, TwoCachesDoNotShareEntries) {
  JitKernelCache<Entry>& first = NewCache();
  JitKernelCache<Entry>& second = NewCache();
  int builds = 0;
  EXPECT_EQ(GetOrBuild(first, "same key", 1, &builds)->value, 1);
  EXPECT_EQ(GetOrBuild(second, "same key", 2, &builds)->value, 2);
  EXPECT_EQ(GetOrBuild(first, "same key", 0, &builds)->value, 1);
  EXPECT_EQ(builds, 2);
}

TEST(JitKernelCache, AFailedBuildIsNotKept) {
  JitKernelCache<Entry>& cache = NewCache();
  absl::StatusOr<Entry> e =
      cache.Get("k", []() -> absl::StatusOr<Entry> { return RuntimeError("compile failed"); });
  EXPECT_FALSE(e.ok());
  int builds = 0;
  EXPECT_EQ(GetOrBuild(cache, "k", 7, &builds)->value, 7);
  EXPECT_EQ(builds, 1);
}

TEST(JitKernelCache, ThreadsSeeOneEntryPerKey) {
  JitKernelCache<Entry>& cache = NewCache();
  std::atomic<int> builds{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < 40; ++i) {
          absl::StatusOr<Entry> e = cache.Get(absl::StrCat("k", i), [&]() -> absl::StatusOr<Entry> {
            builds.fetch_add(1);
            return Entry{i};
          });
          if (!e.ok() || e->value != i) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // Threads missing one key at once may each build it (the map keeps the first).
  EXPECT_GE(builds.load(), 40);
  EXPECT_LE(builds.load(), 4 * 40);
}

TEST(JitKernelCache, PodKeyWritesEveryFieldWhole) {
  const KernelKey k = PodKey('r', 7, true, int64_t{-1});
  ASSERT_EQ(k.size(), 1 + sizeof(int) + 1 + sizeof(int64_t));
  EXPECT_EQ(k[0], 'r');
  int seven = 0;
  std::memcpy(&seven, k.data() + 1, sizeof(int));
  EXPECT_EQ(seven, 7);
  EXPECT_EQ(k[1 + sizeof(int)], 1);
  EXPECT_NE(KeyView(PodKey('r', 7, true, int64_t{-1})),
            KeyView(PodKey('r', 7, false, int64_t{-1})));
}

}  // namespace
}  // namespace pygpukit::ops
