"""benchmarks/memory.py: allocation latency (beside torch, CuPy and, for scale, the driver's
allocators), the fragmentation probe (live / reserved bytes at the peak and host time per op,
beside torch and CuPy), host <-> device transfers (GB/s; `ok` from the script's bit-exact checks
of our copies) and the spill round trip (ours only; `ok`: data bit-exact afterwards)."""

from ..common import PEER_NAMES
from ..registry import Adapter
from ..rows import make_row


def alloc_rows(alloc):
    rows = []
    drivers = {r["case"]: r["driver_us"] for r in alloc if "driver_us" in r}
    for r in alloc:
        if "ours_us" not in r:
            continue
        peers = {PEER_NAMES[p]: r.get(f"{p}_us") for p in ("torch", "cupy") if f"{p}_us" in r}
        rows.append(make_row(r["case"], "latency", "us", r["ours_us"], {**peers, **drivers}))
    return rows


def frag_rows(frag):
    rows = []
    for dist, probe in frag.items():
        libs = {r["library"]: r for r in probe["results"]}
        for field, metric, unit in (
            ("ratio", "live/reserved at peak", "x"),
            ("us_per_op", "host time per op", "us"),
        ):
            # our other pool policies ("pygpukit compact", ...) are in the raw JSON, not peers
            peers = {n: r.get(field) for n, r in libs.items() if not n.startswith("pygpukit")}
            ours = libs.get("pygpukit", {}).get(field)
            rows.append(make_row(f"fragmentation, {dist} sizes", metric, unit, ours, peers))
    return rows


def transfer_rows(transfer):
    checks = transfer.get("checks", {})
    ours_ok = [v for k, v in checks.items() if k.startswith("gp ")]
    rows = []
    for r in transfer.get("results", []):
        peers = {PEER_NAMES[p]: r.get(f"{p}_gbs") for p in ("torch", "cupy") if f"{p}_gbs" in r}
        ok = all(ours_ok) if ours_ok else None
        case = f"{r['case']}, {transfer['bytes'] >> 20} MiB"
        rows.append(make_row(case, "bandwidth", "GB/s", r.get("ours_gbs"), peers, ok=ok))
    return rows


def spill_rows(spill):
    mib = spill["bytes"] >> 20
    return [
        make_row(
            f"{what}, {mib} MiB", "bandwidth", "GB/s", spill[f"{what}_gbs"], ok=spill["bit_exact"]
        )
        for what in ("spill", "page_in", "round_trip")
    ]


def normalize(raw):
    rows = alloc_rows(raw.get("alloc", []))
    rows += frag_rows(raw.get("frag", {}))
    if raw.get("transfer"):
        rows += transfer_rows(raw["transfer"])
    if raw.get("spill"):
        rows += spill_rows(raw["spill"])
    return rows


ADAPTER = Adapter(
    area="memory",
    normalize=normalize,
    script="memory.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu", "--quick"),
    order=70,
)
