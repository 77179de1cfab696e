"""benchmarks/cpp/trace_bench (Google Benchmark): what the always-on tracer costs per record (the
clock read, one record on and off, an allocation with its free, a tiny add) with tracing on beside
off. Needs the C++ build (PYGPUKIT_BUILD_BENCHMARKS=ON)."""

from ..gbench import gbench_adapter

ADAPTER = gbench_adapter("trace-cpp", "trace_bench", order=86)
