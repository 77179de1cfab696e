#include "gil.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace pygpukit::py {
namespace {

namespace pyb = pybind11;

// Sequentially consistent (the default): a call counts itself before it reads `exiting`, the hook
// sets `exiting` before it reads the count, so at least one of them sees the other's write
// (acquire / release alone would allow both to miss).
std::atomic<bool> exiting{false};
std::atomic<int> running{0};  // WithGilUnlessExiting calls past their check of `exiting`

void OnExit() {
  exiting.store(true);
  // The releases already past the check may wait for the GIL: let them have it.
  pyb::gil_scoped_release release;
  for (int i = 0; i < 2000 && running.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

bool WithGilUnlessExiting(absl::FunctionRef<void()> fn) {
  running.fetch_add(1);  // before the check: OnExit then sees this call or it sees `exiting`
  bool ran = false;
  if (!exiting.load() && Py_IsInitialized()) {
    const PyGILState_STATE state = PyGILState_Ensure();
    fn();
    PyGILState_Release(state);
    ran = true;
  }
  running.fetch_sub(1);
  return ran;
}

void RegisterGilExitHook() {
  exiting.store(false);  // an embedding that finalized Python and started it again
  pyb::module_::import("atexit").attr("register")(pyb::cpp_function(&OnExit));
}

}  // namespace pygpukit::py
