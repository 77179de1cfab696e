// The runtime thread that observes GPU completion. Events are queried from this thread (polling
// with a backoff, never from a thread holding the Python GIL) and each completion runs its
// callback here. The scheduler learns that a task's work is done, and the pacer that a kernel
// left the GPU, through it. Events are recycled through a free list.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/hal/backend.h"

namespace pygpukit {

/// Owns one thread; thread-safe.
class EventWatcher {
 public:
  EventWatcher();
  /// Waits for every watched event to complete (their callbacks run), then joins the thread.
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  /// Records an event at the tail of `stream` and calls `done` on the watcher thread once the
  /// work before it has completed (with the backend's error if the query failed).
  absl::Status RecordAndWatch(hal::Backend& backend, hal::Stream& stream,
                              std::function<void(absl::Status)> done);
  /// Callbacks still to run.
  size_t watching() const;
  /// The watcher thread's id (callbacks run on it).
  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  struct Item {
    hal::Backend* backend;
    int device;
    std::unique_ptr<hal::Event> event;
    std::function<void(absl::Status)> done;
  };
  void Loop();
  absl::StatusOr<std::unique_ptr<hal::Event>> TakeEvent(hal::Backend& backend, int device);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Item> items_;
  std::map<std::pair<hal::Backend*, int>, std::vector<std::unique_ptr<hal::Event>>> free_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pygpukit
