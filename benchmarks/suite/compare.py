"""Comparing a run with an earlier one: rows matched by (area, case, metric), our values only.

The change of a row is its speed change, direction-aware: new / old - 1 for higher-is-better
metrics, old / new - 1 for lower-is-better ones, so > 0 is always better. Beyond -noise it is a
regression, beyond +noise an improvement. Rows of only one side are "missing" (previous only,
or our value lost) or "new"."""

from .rows import key, ratio


def change(row, old):
    """Speed change of `row` against the value `old` (None where either is missing)."""
    r = ratio(row["ours"], old, row["higher_is_better"])
    return None if r is None else r - 1


def compare(rows, previous, noise):
    """{"noise", "regressions", "improvements", "unchanged", "missing", "new"}; entries of the
    first two are {area, case, metric, unit, previous, current, change}, sorted worst first."""
    before = {key(r): r for r in previous if r["ours"] is not None}
    out = {"noise": noise, "regressions": [], "improvements": [], "unchanged": 0}
    new = []
    for r in rows:
        k = key(r)
        old = before.get(k)
        if old is None:
            if r["ours"] is not None:
                new.append(list(k))
            continue
        c = change(r, old["ours"])
        if c is None:
            continue  # our value lost: reported as missing below
        entry = {
            "area": k[0],
            "case": k[1],
            "metric": k[2],
            "unit": r["unit"],
            "previous": old["ours"],
            "current": r["ours"],
            "change": c,
        }
        if c < -noise:
            out["regressions"].append(entry)
        elif c > noise:
            out["improvements"].append(entry)
        else:
            out["unchanged"] += 1
    out["regressions"].sort(key=lambda e: e["change"])
    out["improvements"].sort(key=lambda e: -e["change"])
    current = {key(r) for r in rows if r["ours"] is not None}
    out["missing"] = [list(k) for k in before if k not in current]
    out["new"] = new
    return out


def changes_by_key(comparison):
    """{(area, case, metric): change} of the regressions and improvements (for the tables)."""
    if not comparison:
        return {}
    entries = comparison["regressions"] + comparison["improvements"]
    return {(e["area"], e["case"], e["metric"]): e["change"] for e in entries}


def report(comparison, against):
    """The comparison as text lines (summary first, then each regression)."""
    c = comparison
    lines = [
        f"== compared with {against} (noise {c['noise']:.0%}): {len(c['regressions'])} "
        f"regression(s), {len(c['improvements'])} improvement(s), {c['unchanged']} within "
        f"noise, {len(c['missing'])} missing, {len(c['new'])} new"
    ]
    for e in c["regressions"]:
        lines.append(
            f"  REGRESSION {e['area']}: {e['case']} ({e['metric']}) {e['previous']:.4g} -> "
            f"{e['current']:.4g} {e['unit']} ({e['change']:+.1%} speed)"
        )
    for k in c["missing"]:
        lines.append(f"  missing    {k[0]}: {k[1]} ({k[2]})")
    return lines
