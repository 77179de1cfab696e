"""benchmarks/sorting.py: sort, argsort, unique, nonzero and searchsorted beside torch and CuPy:
ms per call, Melem/s as throughput, and the script's exact check against NumPy as `ok`."""

from ..common import count, split
from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = []
    for r in raw.get("cases", []):
        shape = "x".join(str(s) for s in r["shape"]) if len(r["shape"]) > 1 else count(r["n"])
        if "sorted_n" in r:
            shape += f" in {count(r['sorted_n'])}"
        ours, peers = split(r["ms"])
        rows.append(
            make_row(
                f"{r['op']} {r['dtype']} {shape}",
                "time",
                "ms",
                ours,
                peers,
                throughput=r.get("melem_per_s", {}).get("ours"),
                throughput_unit="Melem/s",
                ok=r.get("ok"),
                dtype=r["dtype"],
            )
        )
    return rows


ADAPTER = Adapter(
    area="sorting",
    normalize=normalize,
    script="sorting.py",
    quick_args=("--sizes", "2^16,2^20", "--reps", "3"),
    order=40,
)
