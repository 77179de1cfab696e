"""One text table per area: case, metric, baseline, its value, ours, speedup, throughput,
errors, the check, and the change against an earlier run when one is compared."""

COLUMNS = (
    "case",
    "metric",
    "baseline",
    "base",
    "ours",
    "speedup",
    "throughput",
    "max err",
    "mean err",
)


def num(v):
    """4 significant digits; '-' for None."""
    if v is None:
        return "-"
    return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def err(v):
    return "-" if v is None else f"{v:.1e}"


def metric_name(r):
    return r["metric"] if r["metric"] == r["unit"] else f"{r['metric']} ({r['unit']})"


def cells(r, changes):
    tput = f"{num(r['throughput'])} {r['throughput_unit']}" if r["throughput"] is not None else "-"
    out = [
        r["case"],
        metric_name(r),
        r["baseline"] or "-",
        num(r["baseline_value"]),
        num(r["ours"]),
        "-" if r["speedup"] is None else f"{r['speedup']:.2f}x",
        tput,
        err(r["max_err"]),
        err(r["mean_err"]),
    ]
    if changes is not None:
        c = changes.get((r["area"], r["case"], r["metric"]))
        out.append("" if c is None else f"{c:+.1%}{' REGRESSED' if c < 0 else ''}")
    return out


def render(area, rows, summary=None, changes=None):
    """The table of one area as text. `changes`: {(area, case, metric): speed change} of the
    rows beyond the noise threshold (adds a "vs previous" column)."""
    header = list(COLUMNS) + (["vs previous"] if changes is not None else [])
    has_check = any(r["ok"] is not None for r in rows)
    if has_check:
        header.insert(len(COLUMNS), "check")
    body = []
    for r in rows:
        c = cells(r, changes)
        if has_check:
            c.insert(len(COLUMNS), {True: "ok", False: "FAIL", None: "-"}[r["ok"]])
        body.append(c)
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]

    def fmt(line):
        return "  ".join(
            c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))
        ).rstrip()

    lines = [f"== {area}", fmt(header), "  ".join("-" * w for w in widths)]
    lines += [fmt(line) for line in body]
    if summary and summary["with_baseline"]:
        lines.append(
            f"geomean speedup {summary['geomean_speedup']:.3f}x over {summary['with_baseline']} "
            f"row(s) with a baseline; lowest {summary['min_speedup']:.3f}x: {summary['min_case']}"
        )
    if summary and summary["failed_checks"]:
        lines.append(f"FAILED CHECKS: {'; '.join(summary['failed_checks'])}")
    return "\n".join(lines)
