// Blocking regions: a thread that is about to wait inside the runtime (pacing, waiting for a
// task or for admission) lets the embedding layer release what it holds. The Python binding
// installs hooks that release the GIL, so a waiting thread never stalls other Python threads,
// nor the runtime threads that finish the work it waits for.
#pragma once

namespace pygpukit {

/// `enter` is called before a wait and returns a token that `leave` gets after it.
struct BlockingHooks {
  void* (*enter)() = nullptr;
  void (*leave)(void*) = nullptr;
};

/// Installs the process's hooks (the Python module does, once at import).
void SetBlockingHooks(BlockingHooks hooks);

/// RAII: calls the hooks around a wait.
class BlockingRegion {
 public:
  BlockingRegion();
  ~BlockingRegion();
  BlockingRegion(const BlockingRegion&) = delete;
  BlockingRegion& operator=(const BlockingRegion&) = delete;

 private:
  void* token_ = nullptr;
  void (*leave_)(void*) = nullptr;
};

}  // namespace pygpukit
