#include "runtime/sched/event_watcher.h"

#include <chrono>

#include "core/status.h"

namespace pygpukit {

EventWatcher::EventWatcher() : thread_([this] { Loop(); }) {}

EventWatcher::~EventWatcher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

size_t EventWatcher::watching() const {
  std::lock_guard<std::mutex> l(mu_);
  return items_.size();
}

absl::StatusOr<std::unique_ptr<hal::Event>> EventWatcher::TakeEvent(hal::Backend& backend,
                                                                    int device) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& list = free_[{&backend, device}];
    if (!list.empty()) {
      auto e = std::move(list.back());
      list.pop_back();
      return e;
    }
  }
  return backend.CreateEvent(device, /*timing=*/false);
}

absl::Status EventWatcher::RecordAndWatch(hal::Backend& backend, hal::Stream& stream,
                                          std::function<void(absl::Status)> done) {
  const int device = stream.device().index;
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<hal::Event> event, TakeEvent(backend, device));
  PGK_RETURN_IF_ERROR(backend.Record(*event, stream));
  {
    std::lock_guard<std::mutex> l(mu_);
    items_.push_back(Item{&backend, device, std::move(event), std::move(done)});
  }
  cv_.notify_one();
  return absl::OkStatus();
}

void EventWatcher::Loop() {
  // Poll while work is outstanding: yield first (completions often follow within
  // microseconds), then sleep with a backoff up to 200 us so an idle GPU costs no core.
  int idle_rounds = 0;
  std::vector<Item> batch, pending;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !items_.empty(); });
    if (items_.empty()) return;  // stopping and nothing left
    batch.swap(items_);
    lock.unlock();
    bool progress = false;
    for (Item& it : batch) {
      absl::StatusOr<bool> done = it.backend->Query(*it.event);
      if (done.ok() && !*done) {
        pending.push_back(std::move(it));
        continue;
      }
      progress = true;
      it.done(done.ok() ? absl::OkStatus() : done.status());
      if (done.ok()) {
        std::lock_guard<std::mutex> l(mu_);
        free_[{it.backend, it.device}].push_back(std::move(it.event));
      }
    }
    batch.clear();
    if (progress) {
      idle_rounds = 0;
    } else if (++idle_rounds < 64) {
      std::this_thread::yield();
    } else {
      const int us = std::min(200, 5 << std::min(idle_rounds - 64, 5));
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    lock.lock();
    // Keep submission order: the older items go first on the next round.
    pending.insert(pending.end(), std::make_move_iterator(items_.begin()),
                   std::make_move_iterator(items_.end()));
    items_.swap(pending);
    pending.clear();
  }
}

}  // namespace pygpukit
