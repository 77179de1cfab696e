"""The suite's common row: one measured quantity of one case, ours beside the peers.

A row is a plain dict (it goes into the combined JSON as is):
  area, case, metric, unit    what was measured; (area, case, metric) is the row's key
  higher_is_better            direction of the metric (from the unit unless the adapter says)
  ours                        our value (None: not measured, e.g. our call failed)
  peers                       {peer name: value} of every peer measured (None where it failed)
  baseline, baseline_value    the first peer of the adapter's preference order that has a value
  speedup                     > 1 means ours is better: ours / baseline for higher-is-better
                              metrics, baseline / ours for lower-is-better ones
  throughput, throughput_unit our throughput where the metric is not one (e.g. Melem/s of a time)
  max_err, mean_err           error figures where the area reports them
  ok                          a correctness check of ours where the area has one (else None)
  dtype                       where the area has one (the GEMM roofline needs it)
  flops, bytes                the work of one call where known (FLOPs; the minimum bytes
                              moved from / to memory): places the row under the roofline
  source                      the per-area JSON file the row came from (set by the loader)
"""

import math

HIGHER = {"TFLOP/s", "GB/s", "TB/s", "Melem/s", "items/s", "x", "%", "ops/s"}
LOWER = {"ns", "us", "ms", "s"}


def higher_is_better(unit):
    """The direction of a unit; a unit in neither table is an adapter bug."""
    if unit in HIGHER:
        return True
    if unit in LOWER:
        return False
    raise ValueError(f"unit {unit!r}: say higher_is_better explicitly")


def ratio(ours, base, higher):
    """Direction-aware speedup (> 1: ours better), or None where either value is missing or 0."""
    if ours is None or base is None or ours <= 0 or base <= 0:
        return None
    return ours / base if higher else base / ours


def make_row(
    case,
    metric,
    unit,
    ours,
    peers=None,
    prefer=("torch", "CuPy"),
    higher=None,
    **extra,
):
    """A row (area and source are filled in by the loader). `peers` maps names to values;
    the baseline is the first name of `prefer` with a value, else the first peer with one."""
    higher = higher_is_better(unit) if higher is None else higher
    peers = {k: _num(v) for k, v in (peers or {}).items()}
    ours = _num(ours)
    order = [p for p in prefer if p in peers] + [p for p in peers if p not in prefer]
    base = next((p for p in order if peers[p] is not None), None)
    base_value = peers[base] if base else None
    row = {
        "case": case,
        "metric": metric,
        "unit": unit,
        "higher_is_better": higher,
        "ours": ours,
        "peers": peers,
        "baseline": base,
        "baseline_value": base_value,
        "speedup": ratio(ours, base_value, higher),
        "throughput": None,
        "throughput_unit": None,
        "max_err": None,
        "mean_err": None,
        "ok": None,
        "dtype": None,
        "flops": None,
        "bytes": None,
    }
    unknown = set(extra) - set(row)
    if unknown:
        raise TypeError(f"make_row: unknown fields {sorted(unknown)}")
    row.update(extra)
    return row


def _num(v):
    """Numbers as float; None, NaN and non-numbers (an error string) as None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(v) else float(v)


def key(row):
    return (row["area"], row["case"], row["metric"])


def geomean(values):
    v = [x for x in values if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def summarize(rows):
    """Per area: row count, rows with a baseline, geomean and minimum speedup (with its case)."""
    out = {}
    for area in dict.fromkeys(r["area"] for r in rows):
        rs = [r for r in rows if r["area"] == area]
        sp = [r for r in rs if r["speedup"] is not None]
        worst = min(sp, key=lambda r: r["speedup"]) if sp else None
        out[area] = {
            "rows": len(rs),
            "with_baseline": len(sp),
            "geomean_speedup": geomean(r["speedup"] for r in sp),
            "min_speedup": worst["speedup"] if worst else None,
            "min_case": f"{worst['case']} ({worst['metric']})" if worst else None,
            "failed_checks": [r["case"] for r in rs if r["ok"] is False],
        }
    return out
