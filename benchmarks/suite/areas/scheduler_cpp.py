"""benchmarks/cpp/scheduler_bench (Google Benchmark): admission decisions and scheduler submit /
wait round trips. Needs the C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_rows
from ..registry import Adapter

ADAPTER = Adapter(
    area="scheduler-cpp",
    normalize=gbench_rows,
    binary="scheduler_bench",
    cpu_args=(),
    order=85,
)
