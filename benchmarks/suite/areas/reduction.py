"""benchmarks/reduction.py: GB/s of the JIT reductions and scans beside torch and CuPy; the
relative error of each library's float32 full sum goes on the "sum full float32" row."""

from ..common import bandwidth_rows, split
from ..registry import Adapter


def normalize(raw):
    rows = bandwidth_rows(raw)
    err, _ = split(raw.get("float32_sum_relative_error", {}))
    for r in rows:
        if r["case"].startswith("sum full float32 "):
            r["max_err"] = err
    return rows


ADAPTER = Adapter(
    area="reduction",
    normalize=normalize,
    script="reduction.py",
    quick_args=("--log2n", "24", "--reps", "3"),
    roofline="bandwidth",
    order=30,
)
