"""benchmarks/rng.py: gp.random beside torch's and CuPy's generators: ms per call (a peer
without the function: no value), GB/s written as throughput."""

from ..common import count, split
from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    n = count(raw["n"]) if "n" in raw else "?"
    rows = []
    for case, by_lib in raw.get("cases", {}).items():
        ours, peers = split(by_lib, "ms")
        rows.append(
            make_row(
                case if case == "permutation" else f"{case} n={n}",
                "time",
                "ms",
                ours,
                peers,
                throughput=by_lib.get("ours", {}).get("gbps"),
                throughput_unit="GB/s",
            )
        )
    return rows


ADAPTER = Adapter(
    area="rng",
    normalize=normalize,
    script="rng.py",
    quick_args=("--log2n", "24", "--reps", "3"),
    roofline="bandwidth",
    order=50,
)
