#include "runtime/blocking.h"

#include <mutex>

namespace pygpukit {

namespace {
std::mutex hooks_mu;
BlockingHooks hooks;
}  // namespace

void SetBlockingHooks(BlockingHooks h) {
  std::lock_guard<std::mutex> l(hooks_mu);
  hooks = h;
}

BlockingRegion::BlockingRegion() {
  BlockingHooks h;
  {
    std::lock_guard<std::mutex> l(hooks_mu);
    h = hooks;
  }
  if (h.enter != nullptr) {
    token_ = h.enter();
    leave_ = h.leave;
  }
}

BlockingRegion::~BlockingRegion() {
  if (leave_ != nullptr) leave_(token_);
}

}  // namespace pygpukit
