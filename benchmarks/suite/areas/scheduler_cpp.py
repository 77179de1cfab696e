"""benchmarks/cpp/scheduler_bench (Google Benchmark): admission decisions and scheduler submit /
wait round trips. Needs the C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_adapter

ADAPTER = gbench_adapter("scheduler-cpp", "scheduler_bench", order=85)
