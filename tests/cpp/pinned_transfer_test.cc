// PinnedPool: size classes, reuse, stream-ordered reuse, the limit, Contains / BlockSize,
// EmptyCache, threads. TransferEngine: staged round trips of pageable memory with a tiny chunk
// and odd sizes, direct copies of pinned memory, ordering behind work queued on the stream, and
// staging under the pinned limit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pool_test_util.h"

namespace pygpukit {
namespace {

using namespace pool_testing;  // NOLINT

TEST(PinnedPool, SizeClassesAreFourPerPowerOfTwo) {
  EXPECT_EQ(PinnedSizeClass(0), 4096u);
  EXPECT_EQ(PinnedSizeClass(1), 4096u);
  EXPECT_EQ(PinnedSizeClass(4096), 4096u);
  EXPECT_EQ(PinnedSizeClass(4097), 5120u);
  EXPECT_EQ(PinnedSizeClass(5120), 5120u);
  EXPECT_EQ(PinnedSizeClass(5121), 6144u);
  EXPECT_EQ(PinnedSizeClass(8192), 8192u);
  EXPECT_EQ(PinnedSizeClass(8193), 10240u);
  EXPECT_EQ(PinnedSizeClass(kMiB), kMiB);
  EXPECT_EQ(PinnedSizeClass(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(PinnedSizeClass(3 * kMiB + 1), 3 * kMiB + kMiB / 2);
  std::mt19937_64 rng(3);
  std::vector<size_t> sizes;
  for (int i = 0; i < 5000; ++i) sizes.push_back(1 + rng() % (size_t{1} << (1 + rng() % 40)));
  std::sort(sizes.begin(), sizes.end());
  size_t prev = 0;
  for (size_t n : sizes) {
    const size_t c = PinnedSizeClass(n);
    ASSERT_GE(c, n);
    ASSERT_LE(c, std::max<size_t>(4096, n + n / 4)) << n;  // at most 25% over
    ASSERT_EQ(PinnedSizeClass(c), c) << n;                 // a class is its own class
    ASSERT_GE(c, prev) << n;                               // monotonic
    ASSERT_EQ(c % 1024, 0u) << n;
    prev = c;
  }
}

TEST(PinnedPool, ReusesAFreedBlockOfTheSameClass) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 0);
  ASSERT_OK_AND_ASSIGN(void* p, pool.Allocate(5000));
  EXPECT_EQ(pool.BlockSize(p), 5120u);
  std::memset(p, 7, 5120);  // the whole class is usable
  PinnedStats st = pool.stats();
  EXPECT_EQ(st.allocated_bytes, 5120);
  EXPECT_EQ(st.reserved_bytes, 5120);
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(backend.host_allocs(), 1);
  ASSERT_OK(pool.Free(p));
  EXPECT_EQ(pool.stats().allocated_bytes, 0);
  EXPECT_EQ(pool.stats().reserved_bytes, 5120);
  ASSERT_OK_AND_ASSIGN(void* q, pool.Allocate(4500));  // same class
  EXPECT_EQ(q, p);
  ASSERT_OK_AND_ASSIGN(void* r, pool.Allocate(5000));  // the cached one is taken
  EXPECT_NE(r, p);
  ASSERT_OK_AND_ASSIGN(void* other, pool.Allocate(6000));
  EXPECT_EQ(pool.BlockSize(other), 6144u);
  st = pool.stats();
  EXPECT_EQ(st.num_allocations, 4);
  EXPECT_EQ(st.num_cache_hits, 1);
  EXPECT_EQ(st.num_driver_allocations, 3);
  EXPECT_EQ(st.allocated_bytes, 5120 + 5120 + 6144);
  for (void* x : {q, r, other}) ASSERT_OK(pool.Free(x));
  ASSERT_OK(pool.EmptyCache());
  st = pool.stats();
  EXPECT_EQ(st.reserved_bytes, 0);
  EXPECT_EQ(st.num_driver_frees, 3);
  EXPECT_EQ(backend.host_frees(), 3);
  EXPECT_EQ(st.peak_reserved_bytes, 5120 + 5120 + 6144);
}

TEST(PinnedPool, BlockFreedWithQueuedCopiesIsReusedOnlyAfterThem) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 0);
  ASSERT_OK_AND_ASSIGN(auto s, backend.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto t, backend.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(void* p, pool.Allocate(4096));
  {
    StreamBlocker busy(backend, *s);  // a copy queued on s still reads p
    hal::Stream* in_use[] = {t.get(), s.get()};
    ASSERT_OK(pool.Free(p, in_use));
    ASSERT_OK(backend.Synchronize(*t));  // one of the two streams is done: not enough
    ASSERT_OK_AND_ASSIGN(void* q, pool.Allocate(4096));
    EXPECT_NE(q, p);
    EXPECT_EQ(pool.stats().num_driver_allocations, 2);
    ASSERT_OK(pool.Free(q));
    ASSERT_OK_AND_ASSIGN(void* r, pool.Allocate(100));  // the idle block, not p
    EXPECT_EQ(r, q);
    ASSERT_OK(pool.Free(r));
  }
  ASSERT_OK(backend.Synchronize(*s));
  ASSERT_OK_AND_ASSIGN(void* again, pool.Allocate(4096));
  EXPECT_EQ(again, p);
  EXPECT_EQ(pool.stats().num_driver_allocations, 2);
  EXPECT_EQ(pool.stats().num_cache_hits, 2);
  ASSERT_OK(pool.Free(again));
}

TEST(PinnedPool, LimitReleasesIdleBlocksThenFails) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 8192);
  ASSERT_OK_AND_ASSIGN(void* a, pool.Allocate(4096));
  ASSERT_OK_AND_ASSIGN(void* b, pool.Allocate(4000));
  auto c = pool.Allocate(1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(ErrorTypeOf(c.status()), ErrorType::kMemory) << c.status();
  for (const char* part : {"pinned", "limit 8.00 KiB", "in use 8.00 KiB"}) {
    EXPECT_NE(c.status().message().find(part), absl::string_view::npos) << c.status();
  }
  ASSERT_OK(pool.Free(a));
  ASSERT_OK_AND_ASSIGN(void* c2, pool.Allocate(1));
  EXPECT_EQ(c2, a);
  ASSERT_OK(pool.Free(b));
  ASSERT_OK(pool.Free(c2));
  // Two idle 4 KiB blocks make room for one of 8 KiB.
  ASSERT_OK_AND_ASSIGN(void* x, pool.Allocate(8192));
  PinnedStats st = pool.stats();
  EXPECT_EQ(st.reserved_bytes, 8192);
  EXPECT_EQ(st.num_driver_frees, 2);
  EXPECT_LE(st.peak_reserved_bytes, 8192);
  EXPECT_EQ(st.limit_bytes, 8192);
  ASSERT_OK(pool.SetLimit(4096));  // x is live: nothing to release
  EXPECT_EQ(pool.stats().reserved_bytes, 8192);
  ASSERT_OK(pool.Free(x));
  ASSERT_OK(pool.SetLimit(4096));  // now it goes
  EXPECT_EQ(pool.stats().reserved_bytes, 0);
  EXPECT_EQ(pool.stats().limit_bytes, 4096);
  EXPECT_EQ(ErrorTypeOf(pool.SetLimit(-1)), ErrorType::kValue);
  ASSERT_OK(pool.SetLimit(0));
  ASSERT_OK_AND_ASSIGN(void* big, pool.Allocate(kMiB));
  ASSERT_OK(pool.Free(big));
}

// Concurrent allocations while RawAllocateHost runs unlocked: the block being allocated must
// already count against the limit (regression: both passed the check).
TEST(PinnedPool, LimitHoldsForConcurrentAllocations) {
  QuotaBackend backend(kMiB);
  backend.host_delay_ms = 200;
  PinnedPool pool(&backend, 4096);
  absl::StatusOr<void*> r1, r2;
  Async first([&] { r1 = pool.Allocate(4096); });
  while (backend.host_allocating() == 0 && !first.Done()) std::this_thread::yield();
  Async second([&] { r2 = pool.Allocate(4096); });
  first.Join();
  second.Join();
  EXPECT_EQ(r1.ok() + r2.ok(), 1);
  EXPECT_LE(pool.stats().peak_reserved_bytes, 4096);
  for (auto* r : {&r1, &r2}) {
    if (r->ok()) ASSERT_OK(pool.Free(**r));
  }
}

TEST(PinnedPool, ContainsOnlyLiveBlocks) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 0);
  ASSERT_OK_AND_ASSIGN(void* v, pool.Allocate(10000));
  char* p = static_cast<char*>(v);
  EXPECT_EQ(pool.BlockSize(p), 10240u);
  EXPECT_EQ(pool.BlockSize(p + 1), 0u);
  EXPECT_TRUE(pool.Contains(p, 10240));
  EXPECT_TRUE(pool.Contains(p + 100, 5000));
  EXPECT_TRUE(pool.Contains(p + 10239, 1));
  EXPECT_FALSE(pool.Contains(p, 10241));
  EXPECT_FALSE(pool.Contains(p + 10240, 1));
  EXPECT_FALSE(pool.Contains(p - 1, 2));
  char stack[64];
  std::vector<char> heap(64);
  EXPECT_FALSE(pool.Contains(stack, 8));
  EXPECT_FALSE(pool.Contains(heap.data(), 8));
  ASSERT_OK(pool.Free(p));
  EXPECT_FALSE(pool.Contains(p, 1));
  EXPECT_EQ(pool.BlockSize(p), 0u);
  EXPECT_EQ(ErrorTypeOf(pool.Free(p)), ErrorType::kValue);  // double free
  EXPECT_EQ(ErrorTypeOf(pool.Free(stack)), ErrorType::kValue);
  ASSERT_OK(pool.Free(nullptr));
}

TEST(PinnedPool, EmptyCacheWaitsForQueuedCopies) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 0);
  ASSERT_OK_AND_ASSIGN(auto s, backend.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(void* a, pool.Allocate(4096));
  ASSERT_OK_AND_ASSIGN(void* b, pool.Allocate(8192));
  ASSERT_OK_AND_ASSIGN(void* live, pool.Allocate(4096));
  ASSERT_OK(pool.Free(a));
  {
    StreamBlocker busy(backend, *s);
    hal::Stream* in_use[] = {s.get()};
    ASSERT_OK(pool.Free(b, in_use));
    Async empty([&] { EXPECT_OK(pool.EmptyCache()); });
    EXPECT_FALSE(empty.DoneWithin(50));
    busy.Release();
  }
  PinnedStats st = pool.stats();
  EXPECT_EQ(st.reserved_bytes, 4096);
  EXPECT_EQ(st.allocated_bytes, 4096);
  EXPECT_EQ(st.num_driver_frees, 2);
  EXPECT_EQ(backend.host_frees(), 2);
  ASSERT_OK(pool.Free(live));
}

TEST(PinnedPool, ThreadsAllocatingAndFreeingOnStreams) {
  QuotaBackend backend(kMiB);
  PinnedPool pool(&backend, 0);
  ASSERT_OK_AND_ASSIGN(auto s, backend.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto t, backend.CreateStream(0, 0));
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < 8; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(id);
      std::vector<std::pair<char*, uint8_t>> held;
      for (int i = 0; i < 1000; ++i) {
        if (!held.empty() && (held.size() > 6 || rng() % 2 == 0)) {
          auto [p, tag] = held.back();
          held.pop_back();
          const size_t n = pool.BlockSize(p);
          if (n == 0 || static_cast<uint8_t>(p[0]) != tag ||
              static_cast<uint8_t>(p[n - 1]) != tag) {
            ++errors;
          }
          hal::Stream* in_use[] = {rng() % 2 ? s.get() : t.get()};
          if (!pool.Free(p, rng() % 3 ? absl::Span<hal::Stream* const>(in_use)
                                      : absl::Span<hal::Stream* const>())
                   .ok()) {
            ++errors;
          }
          continue;
        }
        auto r = pool.Allocate(1 + rng() % (64 * kKiB));
        if (!r.ok()) {
          ++errors;
          continue;
        }
        char* p = static_cast<char*>(*r);
        const uint8_t tag = static_cast<uint8_t>(rng());
        const size_t n = pool.BlockSize(p);
        p[0] = p[n - 1] = static_cast<char>(tag);
        held.emplace_back(p, tag);
      }
      for (auto& [p, tag] : held) {
        if (!pool.Free(p).ok()) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  PinnedStats st = pool.stats();
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(st.num_allocations, st.num_cache_hits + st.num_driver_allocations);
  EXPECT_GT(st.num_cache_hits, 0);
  ASSERT_OK(pool.EmptyCache());
  EXPECT_EQ(pool.stats().reserved_bytes, 0);
  EXPECT_EQ(backend.host_allocs(), backend.host_frees());
}

// Backend, pinned pool, engine and a stream; device memory freed at the end.
struct TransferEnv {
  explicit TransferEnv(TransferOptions options = {4096, 2}, int64_t pinned_limit = 0)
      : backend(size_t{1} << 30), pinned(&backend, pinned_limit) {
    auto e = TransferEngine::Create(&backend, kCpu, &pinned, options);
    EXPECT_TRUE(e.ok()) << e.status();
    if (e.ok()) engine = std::move(*e);
    auto st = backend.CreateStream(0, 0);
    EXPECT_TRUE(st.ok()) << st.status();
    if (st.ok()) s = std::move(*st);
  }
  ~TransferEnv() {
    s.reset();
    engine.reset();
    for (void* p : device) EXPECT_OK(backend.RawFree(0, p));
  }
  char* Device(size_t bytes) {
    auto p = backend.RawAllocate(0, bytes);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return nullptr;
    device.push_back(*p);
    return static_cast<char*>(*p);
  }

  QuotaBackend backend;
  PinnedPool pinned;
  std::unique_ptr<TransferEngine> engine;
  std::unique_ptr<hal::Stream> s;
  std::vector<void*> device;
};

TEST(TransferEngine, StagedRoundTripsOfOddSizes) {
  TransferEnv env;  // 4 KiB chunks, 2 in flight
  int64_t chunks = 0, total = 0;
  for (size_t n : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{8192},
                   size_t{3 * 4096 + 17}, size_t{64 * 4096 + 5}, kMiB + 3}) {
    SCOPED_TRACE(n);
    const auto bytes = RandomBytes(n, static_cast<uint32_t>(n));
    std::vector<uint8_t> src = bytes;
    char* dev = env.Device(n);
    ASSERT_OK(env.engine->ToDevice(dev, src.data(), n, *env.s, false));
    std::fill(src.begin(), src.end(), 0);  // pageable source: free to reuse on return
    std::vector<uint8_t> back(n, 0xEE);
    ASSERT_OK(env.engine->ToHost(back.data(), dev, n, *env.s, false));  // filled on return
    EXPECT_TRUE(back == bytes);
    const size_t chunk = std::min<size_t>(4096, n);
    chunks += 2 * static_cast<int64_t>((n + chunk - 1) / chunk);
    total += static_cast<int64_t>(n);
  }
  TransferStats st = env.engine->stats();
  EXPECT_EQ(st.staged_chunks, chunks);
  EXPECT_EQ(st.h2d_bytes, total);
  EXPECT_EQ(st.d2h_bytes, total);
  EXPECT_EQ(st.direct_copies, 0);
  // Staging memory is bounded by the chunks in flight (whatever the size) and all returned.
  EXPECT_LE(env.pinned.stats().peak_reserved_bytes, 8 * 4096);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
}

TEST(TransferEngine, ChunksBelowFourKiBAreRaised) {
  TransferEnv env({100, 0});
  const auto bytes = RandomBytes(8192, 1);
  char* dev = env.Device(8192);
  ASSERT_OK(env.engine->ToDevice(dev, bytes.data(), 8192, *env.s, true));
  EXPECT_TRUE(SameBytes(dev, bytes));  // blocking: landed on return
  EXPECT_EQ(env.engine->stats().staged_chunks, 2);
  ASSERT_OK(env.engine->ToDevice(dev, bytes.data(), 0, *env.s, true));  // nothing to do
  std::vector<uint8_t> back(1);
  ASSERT_OK(env.engine->ToHost(back.data(), dev, 0, *env.s, true));
  EXPECT_EQ(env.engine->stats().staged_chunks, 2);
  EXPECT_EQ(env.engine->stats().h2d_bytes, 8192);
  EXPECT_EQ(env.engine->stats().d2h_bytes, 0);
}

TEST(TransferEngine, PinnedMemoryIsCopiedDirectly) {
  TransferEnv env;
  const size_t n = 10000;
  const auto bytes = RandomBytes(n, 2);
  ASSERT_OK_AND_ASSIGN(void* h, env.pinned.Allocate(n));
  std::memcpy(h, bytes.data(), n);
  char* dev = env.Device(n);
  ASSERT_OK(env.engine->ToDevice(dev, h, n, *env.s, false));
  ASSERT_OK(env.backend.Synchronize(*env.s));
  EXPECT_TRUE(SameBytes(dev, bytes));
  ASSERT_OK_AND_ASSIGN(void* out, env.pinned.Allocate(n));
  std::memset(out, 0, n);
  ASSERT_OK(env.engine->ToHost(out, dev, n, *env.s, false));  // asynchronous; s waits for it
  std::vector<uint8_t> seen(n);
  ASSERT_OK(env.backend.Enqueue(*env.s, [&seen, out, n] { std::memcpy(seen.data(), out, n); }));
  ASSERT_OK(env.backend.Synchronize(*env.s));
  EXPECT_TRUE(seen == bytes);
  // A range inside a pinned block is direct too; a blocking copy has landed on return.
  std::memset(out, 0, n);
  char* o = static_cast<char*>(out);
  ASSERT_OK(env.engine->ToHost(o + 100, dev + 100, 5000, *env.s, true));
  EXPECT_EQ(std::memcmp(o + 100, bytes.data() + 100, 5000), 0);
  EXPECT_EQ(o[99], 0);
  TransferStats st = env.engine->stats();
  EXPECT_EQ(st.direct_copies, 3);
  EXPECT_EQ(st.staged_chunks, 0);
  EXPECT_EQ(st.h2d_bytes, int64_t{10000});
  EXPECT_EQ(st.d2h_bytes, int64_t{15000});
  ASSERT_OK(env.pinned.Free(h));
  ASSERT_OK(env.pinned.Free(out));
}

TEST(TransferEngine, ToDeviceLandsAfterWorkQueuedOnTheStream) {
  // One chunk (returns at once) and more chunks than in flight (the host waits for slots).
  for (size_t n : {size_t{4096}, size_t{5 * 4096 + 5}}) {
    SCOPED_TRACE(n);
    TransferEnv env;
    char* dev = env.Device(n);
    const auto bytes = RandomBytes(n, 3);
    ASSERT_OK(env.backend.Enqueue(*env.s, [dev, n] {  // a kernel still writing the destination
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      std::memset(dev, 0xAA, n);
    }));
    ASSERT_OK(env.engine->ToDevice(dev, bytes.data(), n, *env.s, false));
    std::vector<uint8_t> seen(n);  // later work on the stream sees the copied data
    ASSERT_OK(env.backend.Enqueue(*env.s, [&seen, dev, n] { std::memcpy(seen.data(), dev, n); }));
    ASSERT_OK(env.backend.Synchronize(*env.s));
    EXPECT_TRUE(seen == bytes);
    EXPECT_TRUE(SameBytes(dev, bytes));
  }
}

TEST(TransferEngine, AsynchronousToDeviceDoesNotBlockTheHost) {
  TransferEnv env;
  char* dev = env.Device(4096);
  const auto bytes = RandomBytes(4096, 4);
  StreamBlocker busy(env.backend, *env.s);
  Async copy([&] { EXPECT_OK(env.engine->ToDevice(dev, bytes.data(), 4096, *env.s, false)); });
  EXPECT_TRUE(copy.DoneWithin(2000)) << "ToDevice waited for the stream";
  busy.Release();
  copy.Join();
  ASSERT_OK(env.backend.Synchronize(*env.s));
  EXPECT_TRUE(SameBytes(dev, bytes));
}

TEST(TransferEngine, ToHostReadsAfterWorkQueuedOnTheStream) {
  TransferEnv env;
  const size_t n = 5 * 4096 + 1;
  char* dev = env.Device(n);
  const auto bytes = RandomBytes(n, 5);
  ASSERT_OK(env.backend.Enqueue(*env.s, [dev, &bytes] {  // the kernel producing the data
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::memcpy(dev, bytes.data(), bytes.size());
  }));
  std::vector<uint8_t> out(n);
  ASSERT_OK(env.engine->ToHost(out.data(), dev, n, *env.s, false));
  EXPECT_TRUE(out == bytes);
}

TEST(TransferEngine, PinnedLimitMeansFewerChunksInFlight) {
  TransferEnv env({4096, 4}, /*pinned_limit=*/4096);  // room for one staging chunk
  const size_t n = 10 * 4096 + 7;
  const auto bytes = RandomBytes(n, 6);
  char* dev = env.Device(n);
  ASSERT_OK(env.engine->ToDevice(dev, bytes.data(), n, *env.s, true));
  std::vector<uint8_t> out(n);
  ASSERT_OK(env.engine->ToHost(out.data(), dev, n, *env.s, false));
  EXPECT_TRUE(out == bytes);
  EXPECT_EQ(env.engine->stats().staged_chunks, 22);
  EXPECT_LE(env.pinned.stats().peak_reserved_bytes, 4096);

  // Not even one chunk fits: the copy falls back to a plain (blocking) pageable copy.
  TransferEnv tiny({8192, 2}, /*pinned_limit=*/4096);
  char* d2 = tiny.Device(8192);
  ASSERT_OK(tiny.engine->ToDevice(d2, bytes.data(), 8192, *tiny.s, false));
  ASSERT_OK(tiny.backend.Synchronize(*tiny.s));
  EXPECT_EQ(std::memcmp(d2, bytes.data(), 8192), 0);
  std::vector<uint8_t> out2(8192);
  ASSERT_OK(tiny.engine->ToHost(out2.data(), d2, 8192, *tiny.s, false));
  EXPECT_EQ(std::memcmp(out2.data(), bytes.data(), 8192), 0);
  EXPECT_EQ(tiny.engine->stats().staged_chunks, 0);
  EXPECT_EQ(tiny.engine->stats().h2d_bytes, 8192);
  EXPECT_EQ(tiny.pinned.stats().reserved_bytes, 0);
}

// All pinned memory under the limit is staging of a copy still in flight: a second copy must
// still succeed (waiting for the first, or not staging at all).
TEST(TransferEngine, SecondCopySucceedsWhileTheFirstHoldsAllStaging) {
  TransferEnv env({4096, 2}, /*pinned_limit=*/8192);
  const auto a = RandomBytes(8192, 7), b = RandomBytes(8192, 8);
  char* da = env.Device(8192);
  char* db = env.Device(8192);
  StreamBlocker busy(env.backend, *env.s);  // the first copy's chunks stay in flight
  ASSERT_OK(env.engine->ToDevice(da, a.data(), 8192, *env.s, false));
  Async release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    busy.Release();
  });
  EXPECT_OK(env.engine->ToDevice(db, b.data(), 8192, *env.s, false));
  release.Join();
  ASSERT_OK(env.backend.Synchronize(*env.s));
  EXPECT_TRUE(SameBytes(da, a));
  EXPECT_TRUE(SameBytes(db, b));
}

TEST(TransferEngine, ConcurrentRoundTripsOnSeveralStreams) {
  TransferEnv env({4096, 3});
  std::vector<char*> dev;
  for (int i = 0; i < 4; ++i) dev.push_back(env.Device(64 * kKiB));
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back([&, id] {
      auto s = env.backend.CreateStream(0, 0);
      if (!s.ok()) {
        ++errors;
        return;
      }
      std::mt19937 rng(id);
      for (int i = 0; i < 40; ++i) {
        const size_t n = 1 + rng() % (64 * kKiB);
        const auto bytes = RandomBytes(n, rng());
        std::vector<uint8_t> out(n);
        if (!env.engine->ToDevice(dev[id], bytes.data(), n, **s, false).ok() ||
            !env.engine->ToHost(out.data(), dev[id], n, **s, false).ok() || out != bytes) {
          ++errors;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
  EXPECT_EQ(env.engine->stats().h2d_bytes, env.engine->stats().d2h_bytes);
}

}  // namespace
}  // namespace pygpukit
