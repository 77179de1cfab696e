"""benchmarks/scheduler.py: co-location of a latency-sensitive loop with a best-effort load.

Per mode of ours: p50 and p99 latency of the guaranteed loop (us) and the best-effort TFLOP/s
kept beside it. The peer of a mode is torch doing the same on plain streams: "alone" against
torch_alone, and every co-located mode against torch_plain_prio (the loop's stream at the
highest priority, torch's best way to protect it). be_alone and plain have no torch twin.

benchmarks/cpp/colocation writes the same loop and load from C++ (committed as
<gpu>-sm<XY>-scheduler-colocation-cpp.json): its modes are under "modes", without torch twins
or TFLOP/s, and become rows "cpp <mode>"."""

from ..registry import Adapter
from ..rows import make_row

TORCH_TWIN = {"alone": "torch_alone", "plain_prio": "torch_plain_prio"}
METRICS = (
    ("p50_us", "p50 latency", "us"),
    ("p99_us", "p99 latency", "us"),
    ("be_tflops", "best-effort", "TFLOP/s"),
)


def normalize(raw):
    if "modes" in raw:  # benchmarks/cpp/colocation
        return normalize_cpp(raw)
    by = {r["mode"]: r for r in raw.get("results", [])}
    rows = []
    for mode, r in by.items():
        if mode.startswith("torch"):
            continue
        twin = TORCH_TWIN.get(mode, "torch_plain_prio" if mode.startswith("sched") else None)
        peer = by.get(twin) if twin else None
        for field, metric, unit in METRICS:
            if r.get(field) is None:
                continue
            peers = {f"torch {twin[6:]}": peer.get(field)} if peer else {}
            rows.append(make_row(mode, metric, unit, r[field], peers))
    return rows


def normalize_cpp(raw):
    flops = 2 * raw["be_size"] ** 3  # one best-effort matmul
    rows = []
    for r in raw["modes"]:
        rate = r.get("be_matmuls_per_s")
        r = {**r, "be_tflops": None if rate is None else rate * flops / 1e12}
        for field, metric, unit in METRICS:
            if r.get(field) is not None:
                rows.append(make_row(f"cpp {r['mode']}", metric, unit, r[field]))
    return rows


ADAPTER = Adapter(
    area="scheduler",
    normalize=normalize,
    script="scheduler.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu", "--quick", "--duration", "0.3"),
    order=80,
)
