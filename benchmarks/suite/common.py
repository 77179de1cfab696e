"""Pieces several area adapters share: peer names, per-library dicts, element counts."""

from .rows import make_row

PEER_NAMES = {"torch": "torch", "cupy": "CuPy", "cublaslt": "cuBLASLt"}


def split(by_lib, value=None):
    """{"ours": v, "torch": v, ...} -> (ours, {display name: v}); `value` picks a field from
    per-library dicts ({"ours": {"ms": 1.0}} with value "ms"). Missing or failed: None."""

    def get(v):
        if value is None:
            return v
        return v.get(value) if isinstance(v, dict) else None

    ours = get(by_lib.get("ours"))
    peers = {PEER_NAMES.get(k, k): get(v) for k, v in by_lib.items() if k != "ours"}
    return ours, peers


def count(n):
    """2^k for powers of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def bandwidth_rows(raw):
    """The "bandwidth" list of elementwise.py / reduction.py: GB/s of ours beside torch and
    CuPy per (op, layout, dtype, n)."""
    rows = []
    for r in raw.get("bandwidth", []):
        ours, peers = split(r["gbps"])
        case = f"{r['op']} {r['layout']} {r['dtype']} n={count(r['n'])}"
        rows.append(make_row(case, "GB/s", "GB/s", ours, peers, dtype=r["dtype"]))
    return rows
