// The launch queue (core/launch_queue.h) with a fake submit: order, flush, back pressure,
// sleep and wake of the launcher thread, error keeping, shutdown. Driver-free, so it runs in CI
// and under ThreadSanitizer (scripts/tsan.sh).
#include "core/launch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "sched_test_util.h"

namespace pygpukit {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A launch's payload in these tests: who queued it and its number in that producer's sequence.
struct Payload {
  int producer;
  int seq;
};

// Records what the launcher thread made, in order.
struct Recorder {
  std::mutex mu;
  std::vector<Payload> made;
  std::atomic<int> count{0};
  microseconds delay{0};
  std::thread::id thread;

  absl::Status Submit(const LaunchQueue::Launch& l) {
    Payload p;
    std::memcpy(&p, l.params, sizeof(p));
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    {
      std::lock_guard<std::mutex> g(mu);
      if (thread == std::thread::id()) thread = std::this_thread::get_id();
      EXPECT_EQ(thread, std::this_thread::get_id()) << "launches made on two threads";
      made.push_back(p);
    }
    count.fetch_add(1);
    return absl::OkStatus();
  }
};

// Queues one launch; false when the queue has stopped (the caller would launch directly).
bool TryPush(LaunchQueue& q, int producer, int seq, uint64_t* ticket = nullptr) {
  uint64_t t = 0;
  LaunchQueue::Launch* l = q.Reserve(&t);
  if (l == nullptr) return false;
  const Payload p{producer, seq};
  std::memcpy(l->params, &p, sizeof(p));
  l->dims.grid[0] = static_cast<unsigned>(seq);
  q.Commit(t);
  if (ticket != nullptr) *ticket = t;
  return true;
}

void Push(LaunchQueue& q, int producer, int seq, uint64_t* ticket = nullptr) {
  ASSERT_TRUE(TryPush(q, producer, seq, ticket)) << "the queue refused a launch";
}

std::unique_ptr<LaunchQueue> MakeQueue(Recorder& r, size_t capacity,
                                       std::function<absl::Status()> start = {}) {
  return std::make_unique<LaunchQueue>(
      capacity, [&r](const LaunchQueue::Launch& l) { return r.Submit(l); }, std::move(start));
}

TEST(LaunchQueue, EveryLaunchIsMadeOnceInEachProducersOrder) {
  Recorder r;
  auto q = MakeQueue(r, 16);
  constexpr int kProducers = 6, kEach = 3000;
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) Push(*q, p, i);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(q->Flush().ok());
  EXPECT_EQ(q->launched(), static_cast<uint64_t>(kProducers * kEach));
  std::lock_guard<std::mutex> g(r.mu);
  ASSERT_EQ(r.made.size(), static_cast<size_t>(kProducers * kEach));
  std::vector<int> next(kProducers, 0);
  for (const Payload& p : r.made) {
    ASSERT_GE(p.producer, 0);
    ASSERT_LT(p.producer, kProducers);
    ASSERT_EQ(p.seq, next[p.producer]) << "producer " << p.producer << " out of order";
    ++next[p.producer];
  }
  EXPECT_NE(r.thread, std::this_thread::get_id());
}

TEST(LaunchQueue, FlushReturnsOnlyAfterEveryEarlierLaunchIsMade) {
  Recorder r;
  r.delay = microseconds(300);  // slower than the flush's spin, so the flush sleeps too
  auto q = MakeQueue(r, 64);
  for (int round = 1; round <= 5; ++round) {
    for (int i = 0; i < 10; ++i) Push(*q, 0, (round - 1) * 10 + i);
    ASSERT_TRUE(q->Flush().ok());
    EXPECT_EQ(r.count.load(), round * 10);
  }
  // Flushes from several threads at once, each seeing its own earlier launches made.
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int p = 1; p <= 4; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < 5; ++i) {
        uint64_t ticket = 0;
        Push(*q, p, i, &ticket);
        if (!q->Flush().ok()) ++bad;
        // Launches are made in ticket order: this one and every earlier ticket.
        if (q->launched() <= ticket) ++bad;
        std::lock_guard<std::mutex> g(r.mu);
        bool seen = false;
        for (const Payload& m : r.made) seen |= m.producer == p && m.seq == i;
        if (!seen) ++bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(LaunchQueue, AFullQueueHoldsItsProducersBack) {
  Recorder r;
  r.delay = microseconds(50);
  auto q = MakeQueue(r, 4);
  int most_ahead = 0;
  for (int i = 0; i < 200; ++i) {
    Push(*q, 0, i);
    // Committed minus made: what is waiting, never more than the slots.
    most_ahead = std::max(most_ahead, i + 1 - static_cast<int>(q->launched()));
  }
  ASSERT_TRUE(q->Flush().ok());
  EXPECT_LE(most_ahead, 4);
  EXPECT_GE(most_ahead, 2) << "the producer never ran ahead of the launcher";
  EXPECT_EQ(r.count.load(), 200);
}

TEST(LaunchQueue, ASleepingLauncherWakesForTheNextLaunch) {
  Recorder r;
  auto q = MakeQueue(r, 8);
  for (int i = 0; i < 20; ++i) {
    Push(*q, 0, i);
    // Longer than the launcher's idle spin: it goes to sleep between launches. The launch must
    // be made without another call on the queue (a lost wake-up leaves it waiting for the next
    // one); the generous deadline covers a loaded machine's scheduling delays.
    std::this_thread::sleep_for(milliseconds(1));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (r.count.load() < i + 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(microseconds(50));
    }
    ASSERT_EQ(r.count.load(), i + 1) << "launch " << i << " not made while the caller slept";
  }
  ASSERT_TRUE(q->Flush().ok());
}

TEST(LaunchQueue, AnAsleepLauncherSendsCallersToLaunchDirectlyThenWakesForABurst) {
  Recorder r;
  auto q = MakeQueue(r, 8);
  EXPECT_FALSE(q->LaunchDirectly()) << "a queue whose launcher never started is not asleep";
  Push(*q, 0, 0);
  ASSERT_TRUE(q->Flush().ok());
  // Past its idle spin the launcher sleeps; callers are sent to launch directly, and only the
  // kDirectBeforeWake-th answer in a row wakes it.
  const uint64_t before = q->sleeps();
  ASSERT_TRUE(sched_testing::WaitUntil([&] { return q->LaunchDirectly(); }))
      << "the launcher never slept";
  for (uint32_t i = 1; i + 1 < LaunchQueue::kDirectBeforeWake; ++i) {
    EXPECT_TRUE(q->LaunchDirectly()) << "answer " << i;
  }
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(q->sleeps(), before) << "woken before the burst was long enough";
  EXPECT_TRUE(q->LaunchDirectly());
  EXPECT_TRUE(sched_testing::WaitUntil([&] { return q->sleeps() > before; }))
      << "the launcher was never woken";
  // With a launch queued and not yet made, callers queue behind it (asleep or not).
  r.delay = milliseconds(300);
  Push(*q, 0, 1);
  EXPECT_FALSE(q->LaunchDirectly());
  ASSERT_TRUE(q->Flush().ok());
  EXPECT_EQ(r.count.load(), 2);
}

TEST(LaunchQueue, TheFirstFailureIsKeptAndReportedByEveryLaterFlush) {
  std::atomic<int> n{0};
  LaunchQueue q(8, [&](const LaunchQueue::Launch& l) -> absl::Status {
    const int i = n.fetch_add(1);
    if (i == 3) return RuntimeError("launch 3 refused");
    if (i == 5) return ValueError("launch 5 refused");
    (void)l;
    return absl::OkStatus();
  });
  EXPECT_TRUE(q.Flush().ok());  // nothing queued yet: no thread, nothing to wait for
  EXPECT_TRUE(q.status().ok());
  for (int i = 0; i < 3; ++i) Push(q, 0, i);
  EXPECT_TRUE(q.Flush().ok());
  for (int i = 3; i < 8; ++i) Push(q, 0, i);
  for (int k = 0; k < 2; ++k) {
    absl::Status s = q.Flush();
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_EQ(s.message(), "launch 3 refused");
  }
  EXPECT_EQ(q.status().message(), "launch 3 refused");
  EXPECT_EQ(n.load(), 8) << "launches after the failure are still made";
}

TEST(LaunchQueue, DestructionMakesEveryQueuedLaunch) {
  Recorder r;
  r.delay = microseconds(100);
  {
    auto q = MakeQueue(r, 32);
    for (int i = 0; i < 25; ++i) Push(*q, 0, i);
  }
  EXPECT_EQ(r.count.load(), 25);
}

TEST(LaunchQueue, TheThreadStartHookRunsOnceOnTheLauncherThreadBeforeAnyLaunch) {
  Recorder r;
  std::atomic<int> starts{0};
  std::thread::id start_thread;
  auto q = MakeQueue(r, 8, [&] {
    start_thread = std::this_thread::get_id();
    EXPECT_EQ(r.count.load(), 0);
    starts.fetch_add(1);
    return absl::OkStatus();
  });
  EXPECT_EQ(starts.load(), 0) << "started before the first launch";
  for (int i = 0; i < 10; ++i) Push(*q, 0, i);
  ASSERT_TRUE(q->Flush().ok());
  EXPECT_EQ(starts.load(), 1);
  std::lock_guard<std::mutex> g(r.mu);
  EXPECT_EQ(start_thread, r.thread);
}

TEST(LaunchQueue, AFailedThreadStartIsKeptLikeAFailedLaunch) {
  Recorder r;
  auto q = MakeQueue(r, 8, [] { return RuntimeError("no context"); });
  Push(*q, 0, 0);
  absl::Status s = q->Flush();
  EXPECT_EQ(s.message(), "no context");
  EXPECT_EQ(q->status().message(), "no context");
}

// StopAll is process-wide and final (queues made after it refuse launches): one test calls it,
// the last in the file.
TEST(LaunchQueue, AStoppedQueueRefusesLaunchesAndNeverHangsAFlush) {
  Recorder r;
  auto q = MakeQueue(r, 8);
  for (int i = 0; i < 5; ++i) Push(*q, 0, i);
  // Producers race the stop: each launch either is refused or is made; none is lost.
  std::atomic<int> accepted{5};
  std::atomic<bool> go{true};
  std::vector<std::thread> producers;
  for (int p = 1; p <= 4; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; go.load(); ++i) {
        if (TryPush(*q, p, i)) accepted.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(5));
  LaunchQueue::StopAll();
  std::this_thread::sleep_for(milliseconds(5));  // producers keep trying after the stop
  go.store(false);
  for (auto& t : producers) t.join();
  EXPECT_FALSE(q->accepting());
  EXPECT_TRUE(q->Flush().ok());
  uint64_t ticket = 0;
  EXPECT_FALSE(TryPush(*q, 0, 99, &ticket));
  EXPECT_TRUE(q->Flush().ok());
  EXPECT_EQ(r.count.load(), accepted.load()) << "an accepted launch was never made";
  // A queue first used after StopAll (at exit) refuses launches: no thread to stop is started.
  Recorder late;
  auto q2 = MakeQueue(late, 8);
  EXPECT_FALSE(TryPush(*q2, 0, 0));
  EXPECT_FALSE(q2->accepting());
  EXPECT_TRUE(q2->Flush().ok());
  EXPECT_EQ(late.count.load(), 0);
}

}  // namespace
}  // namespace pygpukit
