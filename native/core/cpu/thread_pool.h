// A fixed pool of host worker threads for data-parallel CPU kernels.
#pragma once

#include <cstdint>
#include <functional>

namespace pygpukit::cpu {

/// Splits [0, n) into chunks of at least `grain` items and runs fn(begin, end) on the pool,
/// returning when all chunks are done. Runs inline when the range is small or from a pool thread.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/// Number of threads ParallelFor may use (PYGPUKIT_NUM_THREADS overrides the core count).
int NumThreads();

/// Caps the threads ParallelFor uses when called from this thread (0: NumThreads()). A stream
/// confined to a partition of the device sets it on its worker.
void SetThreadCap(int threads);

}  // namespace pygpukit::cpu
