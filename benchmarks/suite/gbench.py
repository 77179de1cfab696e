"""Rows from Google Benchmark JSON (benchmarks/cpp/*_bench --benchmark_out): one row per
benchmark (the median aggregate where repetitions were asked for), time per iteration in us,
items/s or bytes/s as throughput. Ours only: these time runtime internals."""

from .registry import Adapter
from .rows import make_row

TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def gbench_rows(raw):
    runs = raw.get("benchmarks", [])
    if any(b.get("run_type") == "aggregate" for b in runs):
        runs = [b for b in runs if b.get("aggregate_name") == "median"]
    rows = []
    for b in runs:
        name = b.get("run_name", b["name"])
        if b.get("label"):
            name += f" ({b['label']})"
        tput, unit = None, None
        if "bytes_per_second" in b:
            tput, unit = b["bytes_per_second"] / 1e9, "GB/s"
        elif "items_per_second" in b:
            tput, unit = b["items_per_second"], "items/s"
        us = b["real_time"] * TO_US[b.get("time_unit", "ns")]
        rows.append(make_row(name, "time", "us", us, throughput=tput, throughput_unit=unit))
    return rows


def gbench_adapter(area, binary, order):
    """The adapter of a Google Benchmark binary in <build dir>/benchmarks/cpp/ (run as it is,
    on the CPU backend too)."""
    return Adapter(area=area, normalize=gbench_rows, binary=binary, cpu_args=(), order=order)
