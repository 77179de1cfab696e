// MemoryPool: size rounding, small segments, best fit with splitting, coalescing, stream-ordered
// reuse (same stream at once, other streams after a fence), record_stream, release of cached
// segments under pressure, the process limit, quotas, ForgetStream / EmptyCache and the
// statistics. Runs on a private CPU backend with a byte quota; host tasks that wait on a gate make
// "work still in flight on a stream" observable.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "pool_test_util.h"

namespace pygpukit {
namespace {

using namespace pool_testing;  // NOLINT

void ExpectMemoryError(const absl::Status& s, std::initializer_list<std::string> parts) {
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(ErrorTypeOf(s), ErrorType::kMemory) << s;
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), absl::string_view::npos) << "'" << p << "' missing in: " << s;
  }
}

TEST(MemoryPool, RoundsRequestsTo512Bytes) {
  EXPECT_EQ(kPoolAlignment, 512u);
  EXPECT_EQ(RoundAllocationSize(0), 512u);
  EXPECT_EQ(RoundAllocationSize(1), 512u);
  EXPECT_EQ(RoundAllocationSize(512), 512u);
  EXPECT_EQ(RoundAllocationSize(513), 1024u);
  EXPECT_EQ(RoundAllocationSize(kMiB + 1), kMiB + 512);
  PoolEnv env(64 * kMiB);
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(1000, *env.s));
  EXPECT_EQ(buf->size(), 1024u);
  EXPECT_EQ(buf->requested(), 1000u);
  EXPECT_EQ(buf->stream(), env.s.get());
  EXPECT_EQ(buf->device(), kCpu);
  EXPECT_TRUE(buf->resident());
  EXPECT_FALSE(buf->evictable());
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.allocated_bytes, 1024);
  EXPECT_EQ(st.requested_bytes, 1000);
  auto huge = env.pool.Allocate(SIZE_MAX / 2, *env.s);
  ExpectMemoryError(huge.status(), {"requested"});
}

// kPoolAlignment is the alignment of every block, so segment bases must be aligned to it too
// (regression: CpuBackend::RawAllocate aligned to 64 bytes only).
TEST(MemoryPool, BlocksAreAlignedToThePoolAlignment) {
  PoolEnv env(64 * kMiB, TinyOptions());
  for (size_t bytes : {1, 4096, 100000}) {
    ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(bytes, *env.s));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % kPoolAlignment, 0u) << bytes;
  }
}

TEST(MemoryPool, SmallRequestsAreCarvedFromOneTwoMiBSegment) {
  PoolEnv env(64 * kMiB);  // default options: small <= 1 MiB, 2 MiB small segments
  std::vector<std::shared_ptr<Buffer>> held;
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(256 * kKiB, *env.s));
    held.push_back(b);
    // Best fit carves consecutive blocks from the front of the segment.
    EXPECT_EQ(Ptr(b), Ptr(held[0]) + i * 256 * kKiB) << i;
  }
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(env.backend.raw_allocs(), 1);
  EXPECT_EQ(st.reserved_bytes, int64_t{2} << 20);
  EXPECT_EQ(st.allocated_bytes, int64_t{2} << 20);
  EXPECT_EQ(st.segments, 1);
  EXPECT_EQ(st.num_cache_hits, 7);
  ASSERT_OK_AND_ASSIGN(auto ninth, env.pool.Allocate(1, *env.s));  // the segment is full
  EXPECT_EQ(env.pool.stats().num_driver_allocations, 2);
  EXPECT_EQ(env.pool.stats().reserved_bytes, int64_t{4} << 20);
  // 1 MiB is still small (carved from the second segment); one byte more is large and takes a
  // 20 MiB shared segment.
  ASSERT_OK_AND_ASSIGN(auto one_mib, env.pool.Allocate(kMiB, *env.s));
  EXPECT_EQ(Ptr(one_mib), Ptr(ninth) + 512);
  EXPECT_EQ(env.pool.stats().reserved_bytes, int64_t{4} << 20);
  ASSERT_OK_AND_ASSIGN(auto large, env.pool.Allocate(kMiB + 1, *env.s));
  EXPECT_EQ(env.pool.stats().reserved_bytes, int64_t{24} << 20);
  EXPECT_EQ(large->size(), kMiB + 512);
}

TEST(MemoryPool, LargeRequestsTakeTheBestFitAndSplitIt) {
  PoolEnv env(64 * kMiB, TinyOptions());
  ASSERT_OK_AND_ASSIGN(auto a, env.pool.Allocate(32 * kKiB, *env.s));  // one 256 KiB segment
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(16 * kKiB, *env.s));
  ASSERT_OK_AND_ASSIGN(auto c, env.pool.Allocate(48 * kKiB, *env.s));
  ASSERT_OK_AND_ASSIGN(auto d, env.pool.Allocate(16 * kKiB, *env.s));
  char* base = Ptr(a);
  EXPECT_EQ(Ptr(b), base + 32 * kKiB);
  EXPECT_EQ(Ptr(c), base + 48 * kKiB);
  EXPECT_EQ(Ptr(d), base + 96 * kKiB);
  a.reset();
  c.reset();  // free: 32 KiB at 0, 48 KiB at 48 KiB, 144 KiB at 112 KiB
  EXPECT_EQ(env.pool.stats().largest_free_block, int64_t{144} << 10);
  ASSERT_OK_AND_ASSIGN(auto x, env.pool.Allocate(24 * kKiB, *env.s));
  EXPECT_EQ(Ptr(x), base);  // the 32 KiB hole, not the 144 KiB tail
  EXPECT_EQ(x->size(), 24 * kKiB);
  ASSERT_OK_AND_ASSIGN(auto y, env.pool.Allocate(40 * kKiB, *env.s));
  EXPECT_EQ(Ptr(y), base + 48 * kKiB);  // the 48 KiB hole
  // Left: 8 KiB at 24 KiB, 8 KiB at 88 KiB. A 6 KiB request takes the lower; its 2 KiB rest is
  // under small_max and stays in the block instead of being split off.
  ASSERT_OK_AND_ASSIGN(auto z, env.pool.Allocate(6 * kKiB, *env.s));
  EXPECT_EQ(Ptr(z), base + 24 * kKiB);
  EXPECT_EQ(z->size(), 8 * kKiB);
  EXPECT_EQ(z->requested(), 6 * kKiB);
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(st.num_cache_hits, 6);
  EXPECT_EQ(st.allocated_bytes, int64_t{(24 + 16 + 40 + 16 + 8) << 10});
  EXPECT_EQ(st.requested_bytes, int64_t{(24 + 16 + 40 + 16 + 6) << 10});
  EXPECT_EQ(st.largest_free_block, int64_t{144} << 10);
}

TEST(MemoryPool, FreedNeighboursCoalesceInEveryOrder) {
  const std::array<std::array<int, 3>, 6> orders = {
      {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  for (const auto& order : orders) {
    SCOPED_TRACE(absl::StrCat(order[0], order[1], order[2]));
    PoolEnv env(64 * kMiB, TinyOptions());
    std::vector<std::shared_ptr<Buffer>> abc;
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(32 * kKiB, *env.s));
      abc.push_back(b);
    }
    ASSERT_OK_AND_ASSIGN(auto tail, env.pool.Allocate(160 * kKiB, *env.s));  // the rest
    char* base = Ptr(abc[0]);
    EXPECT_EQ(Ptr(tail), base + 96 * kKiB);
    EXPECT_EQ(env.pool.stats().largest_free_block, 0);
    abc[order[0]].reset();
    abc[order[1]].reset();
    const bool adjacent = std::abs(order[0] - order[1]) == 1;
    EXPECT_EQ(env.pool.stats().largest_free_block, int64_t{adjacent ? 64 : 32} << 10);
    abc[order[2]].reset();
    EXPECT_EQ(env.pool.stats().largest_free_block, int64_t{96} << 10);
    MemoryStats before = env.pool.stats();
    ASSERT_OK_AND_ASSIGN(auto joined, env.pool.Allocate(96 * kKiB, *env.s));
    EXPECT_EQ(Ptr(joined), base);
    MemoryStats after = env.pool.stats();
    EXPECT_EQ(after.num_cache_hits, before.num_cache_hits + 1);
    EXPECT_EQ(after.num_driver_allocations, 1);
    joined.reset();
    tail.reset();  // the whole segment is one free block again, and can go back
    EXPECT_EQ(env.pool.stats().largest_free_block, int64_t{256} << 10);
    ASSERT_OK(env.pool.EmptyCache());
    EXPECT_EQ(env.pool.stats().reserved_bytes, 0);
    EXPECT_EQ(env.backend.used(), 0u);
  }
}

TEST(MemoryPool, ReusesAtOnceOnTheSameStreamWhileItsWorkIsQueued) {
  PoolEnv env(64 * kMiB);
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(1000, *env.s));
  char* p = Ptr(buf);
  StreamBlocker busy(env.backend, *env.s);  // work queued before the free is still running
  buf.reset();
  ASSERT_OK_AND_ASSIGN(auto again, env.pool.Allocate(900, *env.s));  // returns: no waiting
  EXPECT_EQ(Ptr(again), p);
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_cache_hits, 1);
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(env.backend.waits(), 0);
}

TEST(MemoryPool, OtherStreamsReuseOnlyAfterTheQueuedWorkFinished) {
  PoolEnv env(64 * kMiB, ExactOptions());
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(64 * kKiB, *env.s));
  char* p = Ptr(buf);
  auto busy = std::make_unique<StreamBlocker>(env.backend, *env.s);
  std::atomic<bool> wrote{false};
  ASSERT_OK(env.backend.Enqueue(*env.s, [&wrote, buf] {  // a kernel writing the buffer late
    std::memset(buf->data(), 0x5A, buf->size());
    wrote = true;
  }));
  buf.reset();  // the task still holds it
  ASSERT_OK_AND_ASSIGN(auto other, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_NE(Ptr(other), p) << "the task's reference keeps the buffer live";
  char* o = Ptr(other);
  other.reset();
  busy->Release();
  ASSERT_OK(env.backend.Synchronize(*env.s));  // the task ran and dropped the buffer
  EXPECT_TRUE(wrote);

  // Now freed on s after queued work; block s again so that the free is "in flight".
  ASSERT_OK_AND_ASSIGN(auto b2, env.pool.Allocate(64 * kKiB, *env.s));
  char* q = Ptr(b2);
  busy = std::make_unique<StreamBlocker>(env.backend, *env.s);
  b2.reset();
  const int64_t segs = env.pool.stats().num_driver_allocations;
  ASSERT_OK_AND_ASSIGN(auto on_t, env.pool.Allocate(64 * kKiB, *env.t));
  EXPECT_NE(Ptr(on_t), q);
  EXPECT_NE(Ptr(on_t), p);
  EXPECT_EQ(env.pool.stats().num_driver_allocations, segs + 1);  // a new segment
  busy->Release();
  ASSERT_OK(env.backend.Synchronize(*env.s));
  ASSERT_OK_AND_ASSIGN(auto reused, env.pool.Allocate(64 * kKiB, *env.t));
  EXPECT_TRUE(Ptr(reused) == p || Ptr(reused) == o);  // a cached block of s, fenced now
  EXPECT_EQ(env.pool.stats().num_driver_allocations, segs + 1);
  EXPECT_EQ(reused->stream(), env.t.get());
}

TEST(MemoryPool, UnderPressureAnotherStreamWaitsForTheFenceAndReuses) {
  PoolEnv env(64 * kKiB, ExactOptions());  // room for exactly one 64 KiB segment
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(64 * kKiB, *env.s));
  char* p = Ptr(buf);
  StreamBlocker busy(env.backend, *env.s);
  buf.reset();
  absl::StatusOr<std::shared_ptr<Buffer>> got;
  Async alloc([&] { got = env.pool.Allocate(64 * kKiB, *env.t); });
  EXPECT_FALSE(alloc.DoneWithin(100)) << "handed out while s's work could still touch it";
  busy.Release();
  alloc.Join();
  ASSERT_OK(got);
  EXPECT_EQ(Ptr(*got), p);
  EXPECT_EQ(env.backend.raw_allocs(), 1);
  EXPECT_EQ(env.backend.raw_frees(), 0);  // reused, not released and reallocated
}

// The fence Steal recorded has completed before the pressure path looks again: the caches must
// still be retried (regression: WaitForFences reported "nothing waited for" and the pool failed).
TEST(MemoryPool, UnderPressureReusesABlockWhoseFenceAlreadyCompleted) {
  PoolEnv env(256 * kKiB, TinyOptions());  // exactly one shared 256 KiB segment
  ASSERT_OK_AND_ASSIGN(auto a, env.pool.Allocate(128 * kKiB, *env.s));
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(128 * kKiB, *env.s));
  char* p = Ptr(a);
  a.reset();
  // The fence recorded on s by the first steal attempt completes before the pool looks again
  // (deterministic here; on a GPU an idle stream completes it at once).
  env.backend.on_alloc_failure = [&] { (void)env.backend.Synchronize(*env.s); };
  auto got = env.pool.Allocate(128 * kKiB, *env.t);
  ASSERT_OK(got);
  EXPECT_EQ(Ptr(*got), p);
}

// A block reused on the pressure path (after waiting for a fence) is a cache hit too, so hits +
// driver allocations add up to the allocations (regression: it was not counted).
TEST(MemoryPool, ReuseAfterWaitingForAFenceCountsAsACacheHit) {
  PoolEnv env(64 * kKiB, ExactOptions());
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(64 * kKiB, *env.s));
  {
    StreamBlocker busy(env.backend, *env.s);
    buf.reset();
    Async release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      busy.Release();
    });
    ASSERT_OK_AND_ASSIGN(auto got, env.pool.Allocate(64 * kKiB, *env.t));
  }
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_allocations, 2);
  EXPECT_EQ(st.num_driver_allocations, 1);
  EXPECT_EQ(st.num_cache_hits, 1);
}

TEST(MemoryPool, RecordedStreamDelaysReuseOnTheOwningStream) {
  PoolEnv env(64 * kMiB, ExactOptions());
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(64 * kKiB, *env.s));
  char* p = Ptr(buf);
  ASSERT_OK(env.pool.RecordStream(*buf, *env.t));
  ASSERT_OK(env.pool.RecordStream(*buf, *env.t));  // idempotent
  StreamBlocker busy(env.backend, *env.t);         // t's use is still queued
  buf.reset();
  ASSERT_OK_AND_ASSIGN(auto other, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_NE(Ptr(other), p);
  EXPECT_EQ(env.pool.stats().num_driver_allocations, 2);
  EXPECT_EQ(env.pool.stats().allocated_bytes, int64_t{64} << 10);  // uncharged at the free
  busy.Release();
  ASSERT_OK(env.backend.Synchronize(*env.t));
  ASSERT_OK_AND_ASSIGN(auto again, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_EQ(Ptr(again), p);
  EXPECT_EQ(env.pool.stats().num_driver_allocations, 2);

  // Recording the buffer's own stream changes nothing: reusable at once.
  char* q = Ptr(again);
  ASSERT_OK(env.pool.RecordStream(*again, *env.s));
  StreamBlocker busy_s(env.backend, *env.s);
  again.reset();
  ASSERT_OK_AND_ASSIGN(auto third, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_EQ(Ptr(third), q);
}

// Under pressure the pool waits for the events of blocks freed with recorded uses, as EmptyCache
// (and PyTorch) do (regression: it waited only for stream fences and failed).
TEST(MemoryPool, UnderPressureWaitsForRecordedUsesToFinish) {
  PoolEnv env(64 * kKiB, ExactOptions());
  ASSERT_OK_AND_ASSIGN(auto buf, env.pool.Allocate(64 * kKiB, *env.s));
  char* p = Ptr(buf);
  ASSERT_OK(env.pool.RecordStream(*buf, *env.t));
  StreamBlocker busy(env.backend, *env.t);
  buf.reset();
  Async release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    busy.Release();
  });
  auto got = env.pool.Allocate(64 * kKiB, *env.s);
  ASSERT_OK(got);
  EXPECT_EQ(Ptr(*got), p);
}

TEST(MemoryPool, UnderPressureReleasesLeastRecentlyFreedSegmentsFirst) {
  PoolEnv env(kMiB, ExactOptions());
  std::vector<std::shared_ptr<Buffer>> b;
  std::vector<char*> base;
  for (int i = 0; i < 4; ++i) {  // four 256 KiB segments fill the device
    ASSERT_OK_AND_ASSIGN(auto x, env.pool.Allocate(256 * kKiB, *env.s));
    base.push_back(Ptr(x));
    b.push_back(x);
  }
  EXPECT_EQ(env.backend.used(), kMiB);
  for (int i : {2, 0, 3, 1}) b[i].reset();  // least recently freed: 2, then 0, 3, 1
  ASSERT_OK_AND_ASSIGN(auto big, env.pool.Allocate(512 * kKiB, *env.s));
  EXPECT_EQ(env.backend.freed(), (std::vector<void*>{base[2], base[0]}));
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_evictions, 2);
  EXPECT_EQ(st.num_driver_frees, 2);
  EXPECT_EQ(st.reserved_bytes, int64_t{1} << 20);
  EXPECT_EQ(st.cached_bytes, int64_t{512} << 10);
  EXPECT_EQ(st.segments, 3);

  // Nothing left to release: MemoryError describing the request and the pool.
  auto r = env.pool.Allocate(768 * kKiB, *env.s);
  ExpectMemoryError(r.status(), {"out of memory on cpu", "786432 bytes", "no process limit",
                                 "allocated 512.00 KiB", "reserved 512.00 KiB", "cached 0 bytes"});
  EXPECT_EQ(env.backend.freed(), (std::vector<void*>{base[2], base[0], base[3], base[1]}));
  st = env.pool.stats();
  EXPECT_EQ(st.allocated_bytes, int64_t{512} << 10);
  EXPECT_EQ(st.active_blocks, 1);
  EXPECT_EQ(st.num_allocations, 6);
}

TEST(MemoryPool, ProcessLimitBoundsReservedBytes) {
  PoolEnv env(64 * kMiB);
  ASSERT_OK(env.pool.SetLimit(int64_t{5} << 20));
  EXPECT_EQ(env.pool.limit(), int64_t{5} << 20);
  EXPECT_EQ(env.pool.stats().limit_bytes, int64_t{5} << 20);
  std::vector<std::shared_ptr<Buffer>> held;
  const int64_t expected_reserved[] = {2, 2, 4, 4, 5};  // MiB: the last gets an exact segment
  for (int64_t want : expected_reserved) {
    ASSERT_OK_AND_ASSIGN(auto x, env.pool.Allocate(kMiB, *env.s));
    held.push_back(x);
    EXPECT_EQ(env.pool.stats().reserved_bytes, want << 20);
  }
  auto r = env.pool.Allocate(512, *env.s);
  ExpectMemoryError(r.status(), {"process limit 5.00 MiB", "512 bytes", "reserved 5.00 MiB"});
  EXPECT_EQ(env.pool.stats().reserved_bytes, int64_t{5} << 20);
  EXPECT_LE(env.pool.stats().peak_reserved_bytes, int64_t{5} << 20);

  held.clear();  // all cached; lowering the limit gives back the oldest segments
  ASSERT_OK(env.pool.SetLimit(int64_t{1} << 20));
  MemoryStats st = env.pool.stats();
  EXPECT_LE(st.reserved_bytes, int64_t{1} << 20);
  EXPECT_EQ(st.reserved_bytes, static_cast<int64_t>(env.backend.used()));
  EXPECT_EQ(st.limit_bytes, int64_t{1} << 20);
  ASSERT_OK(env.pool.SetLimit(0));  // no limit again
  ASSERT_OK_AND_ASSIGN(auto big, env.pool.Allocate(8 * kMiB, *env.s));
  EXPECT_EQ(ErrorTypeOf(env.pool.SetLimit(-1)), ErrorType::kValue);
}

TEST(MemoryPool, QuotaScopesChargeThisThreadsAllocations) {
  PoolEnv env(64 * kMiB);
  auto qa = std::make_shared<MemoryQuota>("tenant-a", 8 * kKiB);
  auto qb = std::make_shared<MemoryQuota>("tenant-b", 4 * kKiB);
  std::shared_ptr<Buffer> a1, a2, b1, other;
  EXPECT_EQ(QuotaScope::Current(), nullptr);
  {
    QuotaScope scope(qa);
    EXPECT_EQ(QuotaScope::Current(), qa);
    ASSERT_OK_AND_ASSIGN(a1, env.pool.Allocate(1000, *env.s));
    EXPECT_EQ(qa->used(), 1024);
    std::thread([&] {  // another thread is not in the scope
      EXPECT_EQ(QuotaScope::Current(), nullptr);
      auto r = env.pool.Allocate(4000, *env.s);
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) other = *r;
    })
        .join();
    EXPECT_EQ(qa->used(), 1024);
    auto over = env.pool.Allocate(8000, *env.s);  // 1024 + 8192 > 8 KiB
    ExpectMemoryError(over.status(), {"quota 'tenant-a'", "limit 8.00 KiB", "in use 1.00 KiB"});
    EXPECT_EQ(qa->used(), 1024);
    {
      QuotaScope inner(qb);  // nested: both are charged (an inner scope is no way out)
      EXPECT_EQ(QuotaScope::Current(), qb);
      ASSERT_OK_AND_ASSIGN(b1, env.pool.Allocate(2048, *env.s));
      EXPECT_EQ(qb->used(), 2048);
      EXPECT_EQ(qa->used(), 3072);
      ExpectMemoryError(env.pool.Allocate(2049, *env.s).status(), {"tenant-b"});
      EXPECT_EQ(qa->used(), 3072);  // the failed charge of b was taken back from a too
      {
        auto roomy = std::make_shared<MemoryQuota>("roomy", 64 * kMiB);
        QuotaScope innermost(roomy);
        ExpectMemoryError(env.pool.Allocate(2049, *env.s).status(), {"quota 'tenant-b'"});
        EXPECT_EQ(roomy->used(), 0);
        QuotaScope again(qb);  // a quota already in the chain is charged once
        ASSERT_OK_AND_ASSIGN(auto once, env.pool.Allocate(512, *env.s));
        EXPECT_EQ(qb->used(), 2560);
        EXPECT_EQ(roomy->used(), 512);
      }
      EXPECT_EQ(qb->used(), 2048);
    }
    EXPECT_EQ(QuotaScope::Current(), qa);
    ASSERT_OK_AND_ASSIGN(a2, env.pool.Allocate(512, *env.s));
    EXPECT_EQ(qa->used(), 3584);
  }
  EXPECT_EQ(QuotaScope::Current(), nullptr);
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.allocated_bytes, 1024 + 4096 + 2048 + 512);
  // Freed after the scopes ended: still uncharged from their quotas.
  a1.reset();
  b1.reset();
  EXPECT_EQ(qa->used(), 512);
  EXPECT_EQ(qb->used(), 0);
  a2.reset();
  EXPECT_EQ(qa->used(), 0);
  EXPECT_EQ(qa->peak(), 3584);
  EXPECT_EQ(qb->peak(), 2560);
  EXPECT_EQ(qa->name(), "tenant-a");
  qa->set_limit(16 * kKiB);
  QuotaScope again(qa);
  ASSERT_OK_AND_ASSIGN(auto now_fits, env.pool.Allocate(8000, *env.s));
  EXPECT_EQ(qa->used(), 8192);
}

TEST(MemoryPool, QuotaIsChargedForTheRoundedRequest) {
  PoolEnv env(64 * kMiB, ExactOptions());
  auto q = std::make_shared<MemoryQuota>("t", kMiB);
  QuotaScope scope(q);
  // 260000 bytes round to 260096 in a 256 KiB segment; the 2 KiB rest is below small_max and stays
  // in the block, which the buffer owns; the quota is charged what was asked (rounded), which it
  // could check before the block was chosen.
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(260000, *env.s));
  EXPECT_EQ(b->size(), 256 * kKiB);
  EXPECT_EQ(q->used(), 260096);
  EXPECT_EQ(env.pool.stats().allocated_bytes, int64_t{256} << 10);
  b.reset();
  EXPECT_EQ(q->used(), 0);
}

// The quota is checked and charged for the same figure: a block with an unsplit rest never
// pushes a tenant over its limit.
TEST(MemoryPool, QuotaNeverExceedsItsLimit) {
  PoolEnv env(64 * kMiB, ExactOptions());
  auto q = std::make_shared<MemoryQuota>("tight", 260096);  // the rounded request, not the block
  QuotaScope scope(q);
  auto b = env.pool.Allocate(260000, *env.s);
  EXPECT_LE(q->used(), q->limit()) << (b.ok() ? "allocated" : b.status().ToString());
}

TEST(MemoryPool, ForgottenStreamHandsItsCacheToOtherStreams) {
  PoolEnv env(64 * kMiB, ExactOptions());
  auto u = env.NewStream();
  ASSERT_OK_AND_ASSIGN(auto dead, env.pool.Allocate(64 * kKiB, *u));
  ASSERT_OK_AND_ASSIGN(auto live, env.pool.Allocate(128 * kKiB, *u));
  char* p = Ptr(dead);
  char* q = Ptr(live);
  dead.reset();
  ASSERT_OK(env.pool.ForgetStream(*u));
  ASSERT_OK_AND_ASSIGN(auto got, env.pool.Allocate(64 * kKiB, *env.t));  // no fence needed
  EXPECT_EQ(Ptr(got), p);
  live.reset();  // freed after its stream was forgotten: safe for everyone
  u.reset();
  ASSERT_OK_AND_ASSIGN(auto got2, env.pool.Allocate(128 * kKiB, *env.s));
  EXPECT_EQ(Ptr(got2), q);
  EXPECT_EQ(env.pool.stats().num_driver_allocations, 2);
}

TEST(MemoryPool, EmptyCacheReturnsOnlyFreeSegments) {
  PoolEnv env(64 * kMiB, ExactOptions());
  ASSERT_OK_AND_ASSIGN(auto live, env.pool.Allocate(100 * kKiB, *env.s));
  std::memset(live->data(), 3, live->size());
  { ASSERT_OK_AND_ASSIGN(auto dead, env.pool.Allocate(200 * kKiB, *env.t)); }
  {
    StreamBlocker busy(env.backend, *env.t);  // EmptyCache waits for t before freeing
    Async empty([&] { EXPECT_OK(env.pool.EmptyCache()); });
    EXPECT_FALSE(empty.DoneWithin(50));
    busy.Release();
  }
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.reserved_bytes, int64_t{128} << 10);
  EXPECT_EQ(st.num_driver_frees, 1);
  EXPECT_EQ(env.backend.used(), 128 * kKiB);
  EXPECT_EQ(static_cast<uint8_t*>(live->data())[live->size() - 1], 3);
  ASSERT_OK(env.pool.EmptyCache());
  EXPECT_EQ(env.pool.stats().num_driver_frees, 1);
}

// A free segment whose blocks sit in different streams' caches (which do not coalesce with each
// other) must still go back to the driver (regression: only single-block segments were released).
TEST(MemoryPool, EmptyCacheReleasesASegmentSharedByTwoStreams) {
  PoolEnv env(64 * kMiB, TinyOptions());
  ASSERT_OK_AND_ASSIGN(auto a, env.pool.Allocate(4 * kKiB, *env.s));
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(4 * kKiB, *env.t));  // takes s's untouched rest
  EXPECT_EQ(env.pool.stats().segments, 1);
  a.reset();
  b.reset();
  ASSERT_OK(env.pool.EmptyCache());
  EXPECT_EQ(env.pool.stats().reserved_bytes, 0);
  EXPECT_EQ(env.backend.used(), 0u);
}

// The same under pressure: the free segment must make room for a new one.
TEST(MemoryPool, PressureReleasesASegmentSharedByTwoStreams) {
  PoolEnv env(256 * kKiB, TinyOptions());
  {
    ASSERT_OK_AND_ASSIGN(auto a, env.pool.Allocate(64 * kKiB, *env.s));  // 256 KiB segment
    ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(64 * kKiB, *env.t));
  }
  ASSERT_OK(env.backend.Synchronize(*env.s));
  ASSERT_OK(env.backend.Synchronize(*env.t));
  auto r = env.pool.Allocate(256 * kKiB, *env.s);  // needs the whole device
  ASSERT_OK(r);
  EXPECT_EQ(env.pool.stats().reserved_bytes, int64_t{256} << 10);
}

TEST(MemoryPool, StatsMatchTheBackendAndTheLiveBuffers) {
  PoolEnv env(512 * kMiB, TinyOptions());
  std::mt19937 rng(11);
  std::vector<std::shared_ptr<Buffer>> held;
  int64_t calls = 0, peak = 0;
  for (int i = 0; i < 2000; ++i) {
    if (!held.empty() && (held.size() > 20 || rng() % 2 == 0)) {
      held.erase(held.begin() + rng() % held.size());
    } else {
      size_t bytes = rng() % 3 == 0 ? 1 + rng() % 4096 : 1 + rng() % (300 * kKiB);
      ++calls;
      ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(bytes, rng() % 2 ? *env.s : *env.t));
      held.push_back(b);
    }
    int64_t allocated = 0, requested = 0;
    for (auto& b : held) {
      allocated += static_cast<int64_t>(b->size());
      requested += static_cast<int64_t>(b->requested());
    }
    peak = std::max(peak, allocated);
    MemoryStats st = env.pool.stats();
    ASSERT_EQ(st.allocated_bytes, allocated) << i;
    ASSERT_EQ(st.requested_bytes, requested) << i;
    ASSERT_EQ(st.active_blocks, static_cast<int64_t>(held.size())) << i;
    ASSERT_EQ(st.reserved_bytes, static_cast<int64_t>(env.backend.used())) << i;
    ASSERT_EQ(st.cached_bytes, st.reserved_bytes - st.allocated_bytes) << i;
    ASSERT_EQ(st.segments, static_cast<int64_t>(env.backend.live_allocations())) << i;
    ASSERT_EQ(st.num_allocations, calls) << i;
    ASSERT_EQ(st.num_cache_hits + st.num_driver_allocations, calls) << i;
    ASSERT_EQ(st.num_driver_allocations, env.backend.raw_allocs()) << i;
    ASSERT_EQ(st.peak_allocated_bytes, peak) << i;
    ASSERT_LE(st.largest_free_block, st.cached_bytes) << i;
  }
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.peak_reserved_bytes, static_cast<int64_t>(env.backend.peak_used()));
  env.pool.ResetPeakStats();
  st = env.pool.stats();
  EXPECT_EQ(st.peak_allocated_bytes, st.allocated_bytes);
  EXPECT_EQ(st.peak_reserved_bytes, st.reserved_bytes);
  held.clear();
  st = env.pool.stats();
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(st.requested_bytes, 0);
  EXPECT_EQ(st.active_blocks, 0);
  EXPECT_EQ(st.num_driver_frees, env.backend.raw_frees());
}

}  // namespace
}  // namespace pygpukit
