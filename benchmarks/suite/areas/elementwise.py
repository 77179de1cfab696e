"""benchmarks/elementwise.py: GB/s of the JIT elementwise kernels beside torch and CuPy, the
per-call overhead of a tiny add, the tanh-GELU with and without fusion, and first-call
latencies (compile, disk-cache hit; ours only)."""

from ..common import bandwidth_rows, count, split
from ..registry import Adapter
from ..rows import make_row

# Peers of the GELU rows, the baseline first. Fused, cupy.fuse is the like-for-like peer;
# torch (eager) runs it unfused only.
GELU_PEERS = {
    "unfused": {"torch": "torch unfused", "CuPy": "cupy unfused"},
    "fused": {"CuPy fuse": "cupy fused", "torch eager": "torch unfused"},
}


def normalize(raw):
    rows = bandwidth_rows(raw)
    ours, peers = split(raw.get("overhead_us_per_call", {}))
    if ours is not None:
        rows.append(make_row("16-element add, per call", "host time", "us", ours, peers))
    fusion = raw.get("gelu_fusion", {})
    n = count(raw["bandwidth"][0]["n"] // 4) if raw.get("bandwidth") else "?"
    for kind, names in GELU_PEERS.items():
        mine = fusion.get(f"ours {kind}")
        if mine is None:
            continue
        peers = {name: fusion[k]["ms"] for name, k in names.items() if k in fusion}
        rows.append(
            make_row(
                f"tanh-GELU {kind} float32 n={n}",
                "time",
                "ms",
                mine["ms"],
                peers,
                prefer=tuple(names),
                throughput=mine.get("gbps"),
                throughput_unit="GB/s",
            )
        )
    for what, ms in raw.get("first_call_ms", {}).items():
        rows.append(make_row(f"first call of a new kernel: {what}", "latency", "ms", ms))
    return rows


ADAPTER = Adapter(
    area="elementwise",
    normalize=normalize,
    script="elementwise.py",
    quick_args=("--log2n", "24", "--reps", "3"),
    roofline="bandwidth",
    order=20,
)
