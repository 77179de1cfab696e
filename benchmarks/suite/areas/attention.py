"""benchmarks/attention.py: scaled_dot_product_attention beside torch's dispatch and its cuDNN
and flash backends forced: prefill in TFLOP/s, decode (few query tokens against a KV cache) in
GB/s of the cache read.

One row per case; the baseline is the fastest torch peer of the row."""

from ..registry import Adapter
from ..rows import make_row

PEERS = {"torch": "torch", "torch cuDNN": "torch_cudnn", "torch flash": "torch_flash"}


def value(r, name):
    """Prefill TFLOP/s, or decode GB/s (the script's TB/s)."""
    if r["kind"] == "prefill":
        return r.get(name, {}).get("tflops")
    v = r.get(name, {}).get("tbps")
    return None if v is None else 1e3 * v


def normalize(raw):
    rows = []
    for r in raw["results"]:
        unit = "TFLOP/s" if r["kind"] == "prefill" else "GB/s"
        peers = {label: value(r, name) for label, name in PEERS.items()}
        best = sorted((p for p in peers if peers[p] is not None), key=lambda p: -peers[p])
        case = (
            f"{r['kind']} b{r['batch']} hq{r['hq']} hk{r['hk']} sq{r['sq']} sk{r['sk']} "
            f"d{r['d']}{' causal' if r['causal'] else ''}"
        )
        rows.append(
            make_row(
                case,
                unit,
                unit,
                value(r, "ours"),
                peers,
                prefer=tuple(best),
                max_err=r.get("ours", {}).get("max_abs"),
                dtype=r["dtype"],
            )
        )
    return rows


ADAPTER = Adapter(
    area="attention",
    normalize=normalize,
    script="attention.py",
    quick_args=("--quick",),
    order=16,
)
