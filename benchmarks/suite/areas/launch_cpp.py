"""benchmarks/cpp/launch_bench (Google Benchmark): a tiny add's host time layer by layer (the
driver's launch alone, through the dispatcher, the whole C++ op with and without `out`). Needs the
C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_adapter

ADAPTER = gbench_adapter("launch-cpp", "launch_bench", order=76)
