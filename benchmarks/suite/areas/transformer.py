"""benchmarks/transformer.py: a Llama-style decoder stack of gp.nn and gp.linear beside a torch
module of the same structure on the same weights: prefill time and decode time per step.

Two rows (prefill, decode step); the baseline is the faster torch peer of the row (torch's own
SDPA dispatch, or SDPA held to flash / memory-efficient); the error is the final hidden states'
relative difference from that peer's."""

from ..registry import Adapter
from ..rows import make_row

PEERS = {"torch": "torch", "torch flash": "torch_flash"}


def normalize(raw):
    res, cfg = raw.get("results", {}), raw.get("config", {})
    rows = []
    for phase, key, err in (
        ("prefill", "prefill_ms", "rel_err_prefill"),
        ("decode step", "decode_step_ms", "rel_err_decode"),
    ):
        peers = {label: res.get(name, {}).get(key) for label, name in PEERS.items()}
        best = sorted((p for p in peers if peers[p] is not None), key=lambda p: peers[p])
        errs = res.get(err, {})
        rows.append(
            make_row(
                f"{phase}, {cfg.get('layers')} layers d {cfg.get('dim')}, prompt "
                f"{cfg.get('prompt')}",
                "time",
                "ms",
                res.get("ours", {}).get(key),
                peers,
                prefer=tuple(best),
                max_err=errs.get(PEERS[best[0]]) if best else None,
                dtype=cfg.get("dtype"),
            )
        )
    return rows


ADAPTER = Adapter(
    area="transformer",
    normalize=normalize,
    script="transformer.py",
    quick_args=("--layers", "4", "--steps", "32", "--reps", "3"),
    cpu_args=(
        "--device",
        "cpu",
        "--layers",
        "1",
        "--dim",
        "64",
        "--heads",
        "4",
        "--kv-heads",
        "2",
        "--hidden",
        "96",
        "--prompt",
        "8",
        "--steps",
        "2",
    ),
    timeout=(1800.0, 900.0),
    order=17,
)
