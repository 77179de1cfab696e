// Taking the GIL from the runtime's own threads, for what they release on Python's behalf (a
// producer's DLPack deleter, a reference that keeps foreign memory alive, a task's callable).
#pragma once

#include "absl/functional/function_ref.h"

namespace pygpukit::py {

/// Runs `fn` holding the GIL (from any thread, reentrant), unless the interpreter is exiting;
/// returns whether it ran. At exit CPython stops a thread that waits for the GIL by unwinding
/// it, and the process aborts when that unwinding meets a destructor (a producer's deleter
/// taking the GIL from one, as torch's does); after the exit hook a release is skipped instead
/// and the process frees what it would have freed.
bool WithGilUnlessExiting(absl::FunctionRef<void()> fn);

/// Registers the exit hook (Python's atexit, which runs before finalization stops threads):
/// it ends WithGilUnlessExiting's runs and waits, without the GIL and for at most two seconds,
/// for those already running. Called once when the module loads.
void RegisterGilExitHook();

}  // namespace pygpukit::py
