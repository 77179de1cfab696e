"""benchmarks/cpp/memory_bench (Google Benchmark): pool and pinned-pool allocate / free,
threads, staged and direct transfers. Needs the C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_adapter

ADAPTER = gbench_adapter("memory-cpp", "memory_bench", order=75)
