"""benchmarks/jit.py: what run-time compilation costs (first launch: compile, memory-cache hit,
disk-cache hit in a fresh process; ours only) and the per-launch host overhead of a cached user
kernel beside cupy.RawKernel (and torch's add, for scale)."""

from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = [
        make_row(f"first launch: {what}", "latency", "ms", ms)
        for what, ms in raw.get("first_launch_ms", {}).items()
    ]
    launch = raw.get("launch_us_per_call", {})
    names = {"cupy": "CuPy RawKernel", "torch_add": "torch add"}
    peers = {name: launch[k] for k, name in names.items() if k in launch}
    if launch:
        rows.append(
            make_row(
                "16-element user kernel, per launch",
                "host time",
                "us",
                launch.get("ours"),
                peers,
                prefer=tuple(names.values()),
            )
        )
    return rows


ADAPTER = Adapter(
    area="jit",
    normalize=normalize,
    script="jit.py",
    quick_args=("--reps", "3", "--iters", "500"),
    order=60,
)
