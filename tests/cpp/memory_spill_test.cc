// Spill of evictable buffers to pinned host memory: explicit Evict and page-in through a
// ResidencyPin with the bytes intact, least recently used first under the process limit and under
// a tenant's quota, pinned buffers never spilled, many spill / page-in cycles (one thread and
// several), and the pinned memory of a spilled buffer returned when it is freed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pool_test_util.h"

namespace pygpukit {
namespace {

using namespace pool_testing;  // NOLINT

// Spill-enabled pool whose 64 KiB buffers are one segment each.
struct SpillEnv : PoolEnv {
  SpillEnv() : PoolEnv(64 * kMiB, ExactOptions(), /*spill=*/true) {}

  // A 64 KiB evictable buffer on `stream` holding random bytes (returned in `bytes`).
  std::shared_ptr<Buffer> Evictable(uint32_t seed, std::vector<uint8_t>* bytes,
                                    hal::Stream* stream = nullptr) {
    auto r = pool.Allocate(64 * kKiB, stream ? *stream : *s);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return nullptr;
    *bytes = RandomBytes((*r)->size(), seed);
    std::memcpy((*r)->data(), bytes->data(), bytes->size());
    EXPECT_OK(pool.SetEvictable(**r, true));
    return *r;
  }
  // Pins `b` (paging it in), waits for the page-in on its stream and compares its bytes.
  bool Check(const std::shared_ptr<Buffer>& b, const std::vector<uint8_t>& bytes) {
    ResidencyPin pin;
    absl::Status st = pin.Add(b);
    EXPECT_OK(st);
    EXPECT_OK(backend.Synchronize(*b->stream()));
    return st.ok() && b->resident() && SameBytes(b->data(), bytes);
  }
  void Touch(const std::shared_ptr<Buffer>& b) {
    ResidencyPin pin;
    EXPECT_OK(pin.Add(b));
  }
};

TEST(MemorySpill, EvictAndPageInRestoreTheBytes) {
  SpillEnv env;
  std::vector<uint8_t> bytes;
  auto a = env.Evictable(1, &bytes);
  ASSERT_NE(a, nullptr);
  char* device = Ptr(a);
  EXPECT_TRUE(a->evictable());
  EXPECT_EQ(env.pool.stats().evictable_buffers, 1);
  ASSERT_OK(env.pool.Evict(*a));
  EXPECT_FALSE(a->resident());
  EXPECT_EQ(a->data(), nullptr);
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_spills, 1);
  EXPECT_EQ(st.spilled_bytes, int64_t{64} << 10);
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(st.active_blocks, 0);
  EXPECT_EQ(st.reserved_bytes, int64_t{64} << 10);  // the device block is cached, not freed
  EXPECT_EQ(st.evictable_buffers, 1);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, int64_t{64} << 10);
  EXPECT_EQ(env.engine->stats().direct_copies, 1);  // into pinned memory: no staging
  EXPECT_EQ(env.engine->stats().d2h_bytes, int64_t{64} << 10);
  ASSERT_OK(env.pool.Evict(*a));  // already in host memory
  EXPECT_EQ(env.pool.stats().num_spills, 1);
  {
    ResidencyPin pin;
    ASSERT_OK(pin.Add(a));
    EXPECT_TRUE(a->resident());
    EXPECT_EQ(Ptr(a), device);                   // the cached block came back
    ASSERT_OK(env.backend.Synchronize(*env.s));  // the page-in is ordered on the buffer's stream
    EXPECT_TRUE(SameBytes(a->data(), bytes));
    st = env.pool.stats();
    EXPECT_EQ(st.num_page_ins, 1);
    EXPECT_EQ(st.spilled_bytes, 0);
    EXPECT_EQ(st.allocated_bytes, int64_t{64} << 10);
    EXPECT_EQ(st.num_driver_allocations, 1);
    EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
    EXPECT_EQ(env.engine->stats().h2d_bytes, int64_t{64} << 10);
    absl::Status busy = env.pool.Evict(*a);  // pinned
    EXPECT_EQ(ErrorTypeOf(busy), ErrorType::kRuntime) << busy;
    EXPECT_TRUE(a->resident());
  }
  ASSERT_OK(env.pool.Evict(*a));
  EXPECT_EQ(env.pool.stats().num_spills, 2);
  EXPECT_TRUE(env.Check(a, bytes));
}

TEST(MemorySpill, RejectsWhatCannotBeSpilled) {
  {
    PoolEnv plain(64 * kMiB, ExactOptions());  // no transfer engine
    ASSERT_OK_AND_ASSIGN(auto b, plain.pool.Allocate(4096, *plain.s));
    absl::Status st = plain.pool.SetEvictable(*b, true);
    EXPECT_EQ(ErrorTypeOf(st), ErrorType::kNotImplemented) << st;
    EXPECT_FALSE(b->evictable());
    EXPECT_EQ(plain.pool.stats().evictable_buffers, 0);
  }
  SpillEnv env;
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(4096, *env.s));
  EXPECT_EQ(ErrorTypeOf(env.pool.Evict(*b)), ErrorType::kValue);
  {
    ResidencyPin pin;
    ASSERT_OK(pin.Add(b));        // counted even while the buffer is not evictable, so that
    ASSERT_OK(pin.Add(nullptr));  // marking it evictable meanwhile cannot spill it under an op
    ASSERT_OK(env.pool.SetEvictable(*b, true));
    ASSERT_OK(env.pool.SetEvictable(*b, true));  // idempotent
    EXPECT_EQ(env.pool.stats().evictable_buffers, 1);
    EXPECT_EQ(ErrorTypeOf(env.pool.Evict(*b)), ErrorType::kRuntime);  // pinned
    EXPECT_TRUE(b->resident());
  }
  ASSERT_OK(env.pool.Evict(*b));
  EXPECT_FALSE(b->resident());
}

// Move assignment ends the pins the target held (regression: the defaulted one dropped them
// without unpinning, so those buffers could never be evicted or spilled again).
TEST(MemorySpill, MoveAssignedPinReleasesItsOldPins) {
  SpillEnv env;
  std::vector<uint8_t> bytes_a, bytes_b;
  auto a = env.Evictable(1, &bytes_a);
  auto b = env.Evictable(2, &bytes_b);
  ResidencyPin pin;
  ASSERT_OK(pin.Add(a));
  ResidencyPin other;
  ASSERT_OK(other.Add(b));
  pin = std::move(other);  // now holds b only
  EXPECT_OK(env.pool.Evict(*a));
  EXPECT_EQ(ErrorTypeOf(env.pool.Evict(*b)), ErrorType::kRuntime);
}

TEST(MemorySpill, MovedPinKeepsItsBuffersPinned) {
  SpillEnv env;
  std::vector<uint8_t> bytes;
  auto a = env.Evictable(1, &bytes);
  auto pin = std::make_unique<ResidencyPin>();
  ASSERT_OK(pin->Add(a));
  ResidencyPin moved(std::move(*pin));
  pin.reset();  // the moved-from pin unpins nothing
  EXPECT_EQ(ErrorTypeOf(env.pool.Evict(*a)), ErrorType::kRuntime);
}

TEST(MemorySpill, EvictWaitsForWorkQueuedOnTheBuffersStream) {
  SpillEnv env;
  std::vector<uint8_t> bytes;
  auto a = env.Evictable(1, &bytes);
  auto late = RandomBytes(a->size(), 2);
  void* p = a->data();
  ASSERT_OK(env.backend.Enqueue(*env.s, [p, &late] {  // a kernel still writing the buffer
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::memcpy(p, late.data(), late.size());
  }));
  ASSERT_OK(env.pool.Evict(*a));
  EXPECT_TRUE(env.Check(a, late));
}

TEST(MemorySpill, EvictWaitsForUsesRecordedOnOtherStreams) {
  SpillEnv env;
  std::vector<uint8_t> bytes;
  auto a = env.Evictable(1, &bytes);
  ASSERT_OK(env.pool.RecordStream(*a, *env.t));
  auto late = RandomBytes(a->size(), 2);
  void* p = a->data();
  StreamBlocker busy(env.backend, *env.t);
  ASSERT_OK(env.backend.Enqueue(*env.t, [p, &late] { std::memcpy(p, late.data(), late.size()); }));
  Async evict([&] { EXPECT_OK(env.pool.Evict(*a)); });
  EXPECT_FALSE(evict.DoneWithin(50)) << "spilled while t's queued work could still write it";
  busy.Release();
  evict.Join();
  EXPECT_FALSE(a->resident());
  EXPECT_TRUE(env.Check(a, late));
}

TEST(MemorySpill, SpillsTheLeastRecentlyUsedFirst) {
  SpillEnv env;
  ASSERT_OK(env.pool.SetLimit(192 * kKiB));
  std::vector<uint8_t> ba, bb, bc;
  auto a = env.Evictable(1, &ba);
  auto b = env.Evictable(2, &bb);
  auto c = env.Evictable(3, &bc);
  env.Touch(c);  // use order c, a, b: c is the least recently used
  env.Touch(a);
  env.Touch(b);
  char* pc = Ptr(c);
  ASSERT_OK_AND_ASSIGN(auto d, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_FALSE(c->resident());
  EXPECT_TRUE(a->resident());
  EXPECT_TRUE(b->resident());
  EXPECT_EQ(Ptr(d), pc);
  EXPECT_EQ(env.pool.stats().num_spills, 1);
  ASSERT_OK_AND_ASSIGN(auto e, env.pool.Allocate(64 * kKiB, *env.t));
  EXPECT_FALSE(a->resident());
  EXPECT_TRUE(b->resident());
  // Paging c in needs room: b, the only resident evictable buffer, goes out.
  EXPECT_TRUE(env.Check(c, bc));
  EXPECT_FALSE(b->resident());
  EXPECT_TRUE(env.Check(a, ba));  // spills c (least recently used of the resident ones)
  EXPECT_FALSE(c->resident());
  EXPECT_TRUE(env.Check(b, bb));
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.num_spills, 5);
  EXPECT_EQ(st.num_page_ins, 3);
  EXPECT_LE(st.peak_reserved_bytes, int64_t{192} << 10);
  EXPECT_EQ(st.spilled_bytes, int64_t{128} << 10);
}

TEST(MemorySpill, PinnedBuffersAreNeverSpilled) {
  SpillEnv env;
  ASSERT_OK(env.pool.SetLimit(192 * kKiB));
  std::vector<uint8_t> ba, bb, bc;
  auto a = env.Evictable(1, &ba);
  auto b = env.Evictable(2, &bb);
  auto c = env.Evictable(3, &bc);
  std::shared_ptr<Buffer> d, e;
  {
    ResidencyPin pin;
    ASSERT_OK(pin.Add(a));  // in use, and the least recently used once b and c are touched
    env.Touch(b);
    env.Touch(c);
    ASSERT_OK_AND_ASSIGN(d, env.pool.Allocate(64 * kKiB, *env.s));
    EXPECT_TRUE(a->resident());
    EXPECT_FALSE(b->resident());
    ASSERT_OK_AND_ASSIGN(e, env.pool.Allocate(64 * kKiB, *env.s));
    EXPECT_FALSE(c->resident());
    auto f = env.pool.Allocate(64 * kKiB, *env.s);  // only the pinned a is left
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(ErrorTypeOf(f.status()), ErrorType::kMemory) << f.status();
    EXPECT_NE(f.status().message().find("spilled 128.00 KiB"), absl::string_view::npos)
        << f.status();
    EXPECT_TRUE(a->resident());
  }
  ASSERT_OK_AND_ASSIGN(auto f, env.pool.Allocate(64 * kKiB, *env.s));  // unpinned: a goes
  EXPECT_FALSE(a->resident());
  EXPECT_EQ(env.pool.stats().num_spills, 3);
  d.reset();
  e.reset();
  f.reset();
  EXPECT_TRUE(env.Check(a, ba));
  EXPECT_TRUE(env.Check(b, bb));
  EXPECT_TRUE(env.Check(c, bc));
}

// A spilled block must coalesce with the free rest of its segment (regression: it went to the
// neutral cache while the rest stayed in the stream's, so the segment could neither serve a
// request of its size nor be released, and the allocation failed under the limit).
TEST(MemorySpill, SpillingABlockWithASplitRestFreesItsSegment) {
  SpillEnv env;
  ASSERT_OK(env.pool.SetLimit(128 * kKiB));
  ASSERT_OK_AND_ASSIGN(auto a, env.pool.Allocate(40 * kKiB, *env.s));  // 64 KiB segment
  ASSERT_OK(env.pool.SetEvictable(*a, true));
  ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(64 * kKiB, *env.s));
  auto c = env.pool.Allocate(64 * kKiB, *env.s);
  ASSERT_OK(c);
  EXPECT_FALSE(a->resident());
}

TEST(MemorySpill, NoLongerEvictableBuffersComeBackAndStay) {
  SpillEnv env;
  ASSERT_OK(env.pool.SetLimit(128 * kKiB));
  std::vector<uint8_t> ba, bb;
  auto a = env.Evictable(1, &ba);
  auto b = env.Evictable(2, &bb);
  ASSERT_OK(env.pool.Evict(*a));
  ASSERT_OK(env.pool.SetEvictable(*a, false));  // pages it back in
  EXPECT_TRUE(a->resident());
  EXPECT_FALSE(a->evictable());
  EXPECT_EQ(env.pool.stats().evictable_buffers, 1);
  ASSERT_OK(env.backend.Synchronize(*env.s));
  EXPECT_TRUE(SameBytes(a->data(), ba));
  ASSERT_OK_AND_ASSIGN(auto c, env.pool.Allocate(64 * kKiB, *env.s));  // spills b, not a
  EXPECT_TRUE(a->resident());
  EXPECT_FALSE(b->resident());
  EXPECT_EQ(ErrorTypeOf(env.pool.Evict(*a)), ErrorType::kValue);
}

TEST(MemorySpill, QuotaSpillsOnlyItsTenantsBuffers) {
  SpillEnv env;
  std::vector<uint8_t> bx, ba, bb;
  auto x = env.Evictable(1, &bx);  // no tenant; least recently used of all
  auto q = std::make_shared<MemoryQuota>("tenant", 128 * kKiB);
  QuotaScope scope(q);
  auto a = env.Evictable(2, &ba);
  auto b = env.Evictable(3, &bb);
  EXPECT_EQ(q->used(), int64_t{128} << 10);
  ASSERT_OK_AND_ASSIGN(auto c, env.pool.Allocate(64 * kKiB, *env.s));
  EXPECT_TRUE(x->resident());
  EXPECT_FALSE(a->resident());
  EXPECT_TRUE(b->resident());
  EXPECT_EQ(q->used(), int64_t{128} << 10);
  EXPECT_TRUE(env.Check(a, ba));  // paging a in spills b, the tenant's other buffer
  EXPECT_FALSE(b->resident());
  EXPECT_TRUE(x->resident());
  EXPECT_EQ(q->used(), int64_t{128} << 10);
  c.reset();
  EXPECT_TRUE(env.Check(b, bb));
  EXPECT_EQ(q->used(), int64_t{128} << 10);
  EXPECT_LE(q->peak(), q->limit());
}

TEST(MemorySpill, FreeingASpilledBufferReturnsItsPinnedMemory) {
  SpillEnv env;
  std::vector<uint8_t> bytes;
  auto a = env.Evictable(1, &bytes);
  ASSERT_OK(env.pool.Evict(*a));
  EXPECT_EQ(env.pinned.stats().allocated_bytes, int64_t{64} << 10);
  a.reset();
  MemoryStats st = env.pool.stats();
  EXPECT_EQ(st.spilled_bytes, 0);
  EXPECT_EQ(st.evictable_buffers, 0);
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
  ASSERT_OK(env.pinned.EmptyCache());
  EXPECT_EQ(env.pinned.stats().reserved_bytes, 0);
  ASSERT_OK(env.pool.EmptyCache());
  EXPECT_EQ(env.pool.stats().reserved_bytes, 0);
}

TEST(MemorySpill, BytesSurviveManyRandomSpillCycles) {
  PoolEnv env(64 * kMiB, ExactOptions(), /*spill=*/true);
  const int64_t limit = 384 * kKiB;
  ASSERT_OK(env.pool.SetLimit(limit));
  std::mt19937 rng(5);
  std::vector<std::shared_ptr<Buffer>> bufs;
  std::vector<std::vector<uint8_t>> mirror;
  // Whole segments, so that spilled blocks coalesce (see SpillingABlockWithASplitRest...).
  for (size_t bytes : {64 * kKiB, 128 * kKiB, 192 * kKiB, 64 * kKiB, 256 * kKiB, 128 * kKiB}) {
    ASSERT_OK_AND_ASSIGN(auto b, env.pool.Allocate(bytes, rng() % 2 ? *env.s : *env.t));
    mirror.push_back(RandomBytes(bytes, static_cast<uint32_t>(bytes)));
    std::memcpy(b->data(), mirror.back().data(), bytes);
    ASSERT_OK(env.pool.SetEvictable(*b, true));
    bufs.push_back(b);
  }
  for (int i = 0; i < 400; ++i) {
    const size_t k = rng() % bufs.size();
    if (rng() % 5 == 0) {
      ASSERT_OK(env.pool.Evict(*bufs[k]));
      ASSERT_FALSE(bufs[k]->resident());
    } else {
      ResidencyPin pin;
      ASSERT_OK(pin.Add(bufs[k]));
      ASSERT_OK(env.backend.Synchronize(*bufs[k]->stream()));
      ASSERT_TRUE(SameBytes(bufs[k]->data(), mirror[k])) << "buffer " << k << " step " << i;
      const size_t off = rng() % mirror[k].size();
      const size_t len = std::min<size_t>(mirror[k].size() - off, 1 + rng() % 4096);
      for (size_t j = off; j < off + len; ++j) mirror[k][j] = static_cast<uint8_t>(rng());
      std::memcpy(Ptr(bufs[k]) + off, mirror[k].data() + off, len);
    }
    MemoryStats st = env.pool.stats();
    ASSERT_LE(st.reserved_bytes, limit);
    int64_t spilled = 0;
    for (auto& b : bufs) spilled += b->resident() ? 0 : static_cast<int64_t>(b->size());
    ASSERT_EQ(st.spilled_bytes, spilled) << i;
  }
  MemoryStats st = env.pool.stats();
  EXPECT_GT(st.num_spills, 100);
  EXPECT_GT(st.num_page_ins, 100);
  for (size_t k = 0; k < bufs.size(); ++k) {
    ResidencyPin pin;
    ASSERT_OK(pin.Add(bufs[k]));
    ASSERT_OK(env.backend.Synchronize(*bufs[k]->stream()));
    EXPECT_TRUE(SameBytes(bufs[k]->data(), mirror[k])) << k;
  }
  bufs.clear();
  EXPECT_EQ(env.pool.stats().spilled_bytes, 0);
  EXPECT_EQ(env.pool.stats().allocated_bytes, 0);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
}

TEST(MemorySpill, ThreadsPinningTheirBuffersWhileOthersSpillThem) {
  // 4 threads x 3 buffers of 64 KiB under a limit of 7: each thread pins one buffer at a time,
  // so at most 3 are pinned and 3 being spilled by others: a page-in always finds room.
  PoolEnv env(64 * kMiB, ExactOptions(), /*spill=*/true);
  ASSERT_OK(env.pool.SetLimit(7 * 64 * kKiB));
  std::vector<std::unique_ptr<hal::Stream>> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(env.NewStream());
  std::atomic<int> errors{0}, mismatches{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back([&, id] {
      hal::Stream& s = *streams[id];
      std::mt19937 rng(id);
      std::vector<std::shared_ptr<Buffer>> bufs;
      std::vector<std::vector<uint8_t>> mirror;
      for (int k = 0; k < 3; ++k) {
        auto r = env.pool.Allocate(64 * kKiB, s);
        if (!r.ok()) {
          ++errors;
          ADD_FAILURE() << r.status();
          continue;
        }
        // Evictable before the bytes are written: another thread may spill it at once.
        ResidencyPin pin;
        absl::Status st = env.pool.SetEvictable(**r, true);
        if (st.ok()) st = pin.Add(*r);
        if (!st.ok()) {
          ++errors;
          ADD_FAILURE() << st;
        }
        (void)env.backend.Synchronize(s);
        mirror.push_back(RandomBytes(64 * kKiB, id * 10 + k));
        std::memcpy((*r)->data(), mirror.back().data(), 64 * kKiB);
        bufs.push_back(*r);
      }
      for (int i = 0; i < 150 && !bufs.empty(); ++i) {
        const size_t k = rng() % bufs.size();
        if (rng() % 6 == 0) {
          if (absl::Status st = env.pool.Evict(*bufs[k]); !st.ok()) {
            ++errors;
            ADD_FAILURE() << st;
          }
          continue;
        }
        ResidencyPin pin;
        absl::Status st = pin.Add(bufs[k]);
        if (!st.ok()) {
          ++errors;
          ADD_FAILURE() << st;
          continue;
        }
        if (!env.backend.Synchronize(s).ok()) ++errors;
        if (!SameBytes(bufs[k]->data(), mirror[k])) {
          ++mismatches;
          const uint8_t* got = static_cast<const uint8_t*>(bufs[k]->data());
          size_t at = 0;
          while (at < mirror[k].size() && got[at] == mirror[k][at]) ++at;
          ADD_FAILURE() << "thread " << id << " buffer " << k << " step " << i
                        << ": first differing byte at " << at;
        }
        const size_t off = rng() % (64 * kKiB - 64);
        for (size_t j = off; j < off + 64; ++j) mirror[k][j] = static_cast<uint8_t>(rng());
        std::memcpy(Ptr(bufs[k]) + off, mirror[k].data() + off, 64);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  MemoryStats st = env.pool.stats();
  EXPECT_GT(st.num_spills, 50);
  EXPECT_LE(st.peak_reserved_bytes, int64_t{7 * 64} << 10);
  // The threads' buffers are gone, spilled or not.
  EXPECT_EQ(st.allocated_bytes, 0);
  EXPECT_EQ(st.spilled_bytes, 0);
  EXPECT_EQ(st.evictable_buffers, 0);
  EXPECT_EQ(env.pinned.stats().allocated_bytes, 0);
}

}  // namespace
}  // namespace pygpukit
