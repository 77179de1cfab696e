// CachingAllocator: size rounding, reuse on the same stream, stream-ordered reuse across streams,
// the release-and-retry path under memory pressure, and its statistics. Runs on a private CPU
// backend wrapped with a byte quota, so "out of device memory" is deterministic.
#include "runtime/allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "test_util.h"

namespace pygpukit {
namespace {

// The CPU backend with a limit on raw bytes outstanding, like a small GPU.
class QuotaBackend final : public hal::Backend {
 public:
  explicit QuotaBackend(size_t quota) : quota_(quota) {}
  DeviceType type() const override { return DeviceType::kCPU; }
  int device_count() const override { return 1; }
  absl::StatusOr<hal::DeviceProperties> properties(int d) const override {
    return cpu_.properties(d);
  }
  absl::StatusOr<void*> RawAllocate(int d, size_t bytes) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (used_ + bytes > quota_) {
        return MemoryError(absl::StrCat("quota: ", bytes, " bytes do not fit"));
      }
      used_ += bytes;
    }
    auto p = cpu_.RawAllocate(d, bytes);
    std::lock_guard<std::mutex> l(mu_);
    if (!p.ok()) {
      used_ -= bytes;
      return p;
    }
    sizes_[*p] = bytes;
    ++raw_allocs_;
    return p;
  }
  absl::Status RawFree(int d, void* ptr) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      used_ -= sizes_[ptr];
      sizes_.erase(ptr);
      ++raw_frees_;
    }
    return cpu_.RawFree(d, ptr);
  }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int) const override {
    std::lock_guard<std::mutex> l(mu_);
    return std::pair<size_t, size_t>(quota_ - used_, quota_);
  }
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(int d, int p) override {
    return cpu_.CreateStream(d, p);
  }
  std::pair<int, int> StreamPriorityRange() const override { return cpu_.StreamPriorityRange(); }
  absl::StatusOr<std::unique_ptr<hal::Event>> CreateEvent(int d, bool t) override {
    return cpu_.CreateEvent(d, t);
  }
  absl::Status Record(hal::Event& e, hal::Stream& s) override { return cpu_.Record(e, s); }
  absl::Status Wait(hal::Stream& s, hal::Event& e) override {
    ++waits_;
    return cpu_.Wait(s, e);
  }
  absl::StatusOr<bool> Query(hal::Event& e) override { return cpu_.Query(e); }
  absl::Status Synchronize(hal::Event& e) override { return cpu_.Synchronize(e); }
  absl::Status Synchronize(hal::Stream& s) override { return cpu_.Synchronize(s); }
  absl::StatusOr<float> ElapsedMs(hal::Event& a, hal::Event& b) override {
    return cpu_.ElapsedMs(a, b);
  }
  absl::Status CopyAsync(void* dst, const void* src, size_t n, hal::CopyKind k,
                         hal::Stream& s) override {
    return cpu_.CopyAsync(dst, src, n, k, s);
  }
  absl::Status MemsetAsync(void* dst, uint8_t v, size_t n, hal::Stream& s) override {
    return cpu_.MemsetAsync(dst, v, n, s);
  }

  cpu::CpuBackend& cpu() { return cpu_; }
  size_t used() const {
    std::lock_guard<std::mutex> l(mu_);
    return used_;
  }
  int raw_allocs() const { return raw_allocs_; }
  int raw_frees() const { return raw_frees_; }
  int waits() const { return waits_; }

 private:
  cpu::CpuBackend cpu_;
  size_t quota_;
  mutable std::mutex mu_;
  size_t used_ = 0;
  std::map<void*, size_t> sizes_;
  std::atomic<int> raw_allocs_{0}, raw_frees_{0}, waits_{0};
};

constexpr Device kCpu{DeviceType::kCPU, 0};

TEST(Allocator, RoundsSizes) {
  EXPECT_EQ(RoundAllocationSize(0), 512u);
  EXPECT_EQ(RoundAllocationSize(1), 512u);
  EXPECT_EQ(RoundAllocationSize(512), 512u);
  EXPECT_EQ(RoundAllocationSize(513), 1024u);
  EXPECT_EQ(RoundAllocationSize(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(RoundAllocationSize((size_t{1} << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(RoundAllocationSize((size_t{5} << 20) + 3), size_t{6} << 20);
}

TEST(Allocator, ReusesAFreedBlockOnTheSameStreamWithoutWaiting) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  void* first;
  {
    ASSERT_OK_AND_ASSIGN(auto buf, alloc.Allocate(1000, *s));
    EXPECT_EQ(buf->size(), 1024u);
    EXPECT_EQ(buf->stream(), s.get());
    first = buf->data();
    MemoryStats st = alloc.stats();
    EXPECT_EQ(st.allocated_bytes, 1024);
    EXPECT_EQ(st.active_blocks, 1);
  }
  EXPECT_EQ(alloc.stats().allocated_bytes, 0);
  EXPECT_EQ(alloc.stats().reserved_bytes, 1024);
  ASSERT_OK_AND_ASSIGN(auto again, alloc.Allocate(900, *s));
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(b.waits(), 0);
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.num_allocations, 2);
  EXPECT_EQ(st.num_cache_hits, 1);
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(b.raw_allocs(), 1);
}

TEST(Allocator, DoesNotHandOutABlockMuchLargerThanAsked) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  { ASSERT_OK_AND_ASSIGN(auto big, alloc.Allocate(size_t{8} << 20, *s)); }
  ASSERT_OK_AND_ASSIGN(auto small, alloc.Allocate(4096, *s));
  EXPECT_EQ(small->size(), 4096u);
  EXPECT_EQ(alloc.stats().num_cache_hits, 0);
  EXPECT_EQ(alloc.stats().reserved_bytes, (int64_t{8} << 20) + 4096);
}

// A block freed while its stream still has queued work that writes it: a different stream may
// reuse it only after that work. The allocator must order the new stream after the old one.
TEST(Allocator, CrossStreamReuseWaitsForTheOwningStream) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s1, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto s2, b.CreateStream(0, 0));
  void* p;
  {
    ASSERT_OK_AND_ASSIGN(auto buf, alloc.Allocate(4096, *s1));
    p = buf->data();
    // Queued work that writes the block late; the Buffer itself is dropped right away, as an
    // array whose last kernel is still in flight on a GPU.
    ASSERT_OK(b.cpu().Enqueue(*s1, [p] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::memset(p, 0x5A, 4096);
    }));
  }
  ASSERT_OK_AND_ASSIGN(auto reused, alloc.Allocate(4096, *s2));
  ASSERT_EQ(reused->data(), p);
  EXPECT_EQ(reused->stream(), s2.get());
  EXPECT_EQ(b.waits(), 1);
  uint8_t seen = 0;
  ASSERT_OK(b.cpu().Enqueue(*s2, [&, p] { seen = static_cast<uint8_t*>(p)[4095]; }));
  ASSERT_OK(b.Synchronize(*s2));
  EXPECT_EQ(seen, 0x5A) << "the new owner ran before the old stream's write";
  ASSERT_OK(b.Synchronize(*s1));
}

TEST(Allocator, PrefersABlockOfItsOwnStream) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s1, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto s2, b.CreateStream(0, 0));
  void* mine;
  {
    ASSERT_OK_AND_ASSIGN(auto other, alloc.Allocate(2048, *s1));
    ASSERT_OK_AND_ASSIGN(auto own, alloc.Allocate(2048, *s2));
    mine = own->data();
  }
  ASSERT_OK_AND_ASSIGN(auto got, alloc.Allocate(2048, *s2));
  EXPECT_EQ(got->data(), mine);
  EXPECT_EQ(b.waits(), 0);
}

TEST(Allocator, UnderPressureReleasesTheCacheAndRetries) {
  QuotaBackend b(size_t{8} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  {
    ASSERT_OK_AND_ASSIGN(auto x, alloc.Allocate(size_t{3} << 20, *s));  // 4 MiB rounded
    ASSERT_OK_AND_ASSIGN(auto y, alloc.Allocate(size_t{3} << 20, *s));
  }
  EXPECT_EQ(b.used(), size_t{8} << 20);  // both cached, none free at the "driver"
  // 6 MiB fits no cached block (4 MiB each) and not beside them: the cache must go first.
  ASSERT_OK_AND_ASSIGN(auto z, alloc.Allocate(size_t{6} << 20, *s));
  EXPECT_EQ(z->size(), size_t{6} << 20);
  EXPECT_EQ(b.raw_frees(), 2);
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.num_driver_frees, 2);
  EXPECT_EQ(st.reserved_bytes, int64_t{6} << 20);
  EXPECT_EQ(st.allocated_bytes, int64_t{6} << 20);
}

TEST(Allocator, OutOfMemoryIsAMemoryErrorNamingTheRequest) {
  QuotaBackend b(size_t{4} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto live, alloc.Allocate(size_t{2} << 20, *s));
  auto r = alloc.Allocate(size_t{3} << 20, *s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorTypeOf(r.status()), ErrorType::kMemory) << r.status();
  EXPECT_NE(r.status().message().find(absl::StrCat(size_t{3} << 20)), absl::string_view::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("cpu"), absl::string_view::npos) << r.status();
  // The failed request leaves the books as they were.
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.allocated_bytes, int64_t{2} << 20);
  EXPECT_EQ(st.active_blocks, 1);
}

TEST(Allocator, EmptyCacheReturnsOnlyFreeBlocks) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto live, alloc.Allocate(10000, *s));
  std::memset(live->data(), 3, 10000);
  { ASSERT_OK_AND_ASSIGN(auto dead, alloc.Allocate(20000, *s)); }
  ASSERT_OK(alloc.EmptyCache());
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.reserved_bytes, static_cast<int64_t>(live->size()));
  EXPECT_EQ(st.num_driver_frees, 1);
  EXPECT_EQ(static_cast<uint8_t*>(live->data())[9999], 3);  // live data untouched
  ASSERT_OK(alloc.EmptyCache());                            // idempotent
  EXPECT_EQ(alloc.stats().num_driver_frees, 1);
}

TEST(Allocator, EmptyCacheLeavesTheStreamsErrorsToItsOwner) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  { ASSERT_OK_AND_ASSIGN(auto dead, alloc.Allocate(4096, *s)); }
  ASSERT_OK(b.cpu().Enqueue(*s, [] { throw std::runtime_error("user kernel failed"); }));
  ASSERT_OK(alloc.EmptyCache());
  EXPECT_EQ(alloc.stats().reserved_bytes, 0);
  absl::Status st = b.Synchronize(*s);  // the user's error is still there for the user
  EXPECT_NE(st.message().find("user kernel failed"), absl::string_view::npos) << st;
}

TEST(Allocator, PeakTracksTheHighWaterMark) {
  QuotaBackend b(size_t{64} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  {
    ASSERT_OK_AND_ASSIGN(auto x, alloc.Allocate(512, *s));
    ASSERT_OK_AND_ASSIGN(auto y, alloc.Allocate(1024, *s));
  }
  ASSERT_OK_AND_ASSIGN(auto z, alloc.Allocate(512, *s));
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.peak_allocated_bytes, 1536);
  EXPECT_EQ(st.allocated_bytes, 512);
}

TEST(Allocator, ConcurrentAllocateAndFreeKeepTheBooksBalanced) {
  QuotaBackend b(size_t{256} << 20);
  CachingAllocator alloc(&b, kCpu);
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::shared_ptr<Buffer>> held;
      for (int i = 0; i < 2000; ++i) {
        if (held.size() > 8 || (rng() % 3 == 0 && !held.empty())) {
          held.erase(held.begin() + rng() % held.size());
        } else {
          auto r = alloc.Allocate(1 + rng() % 100000, *s);
          if (!r.ok()) {
            ++failures;
          } else {
            held.push_back(*r);
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  MemoryStats st = alloc.stats();
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(st.active_blocks, 0);
  EXPECT_EQ(static_cast<size_t>(st.reserved_bytes), b.used());
  ASSERT_OK(alloc.EmptyCache());
  EXPECT_EQ(b.used(), 0u);
}

}  // namespace
}  // namespace pygpukit
