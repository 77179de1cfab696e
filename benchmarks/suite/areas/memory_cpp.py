"""benchmarks/cpp/memory_bench (Google Benchmark): pool and pinned-pool allocate / free,
threads, staged and direct transfers. Needs the C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_rows
from ..registry import Adapter

ADAPTER = Adapter(
    area="memory-cpp",
    normalize=gbench_rows,
    binary="memory_bench",
    cpu_args=(),
    order=75,
)
