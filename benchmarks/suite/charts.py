"""PNG charts of a suite run (matplotlib, when importable):
<stem>-overview.png        geomean speedup against the baseline, one bar per area
<stem>-<area>-ratio.png    ours / peer (direction-aware speedup) per case, log scale, 1.0 line
<stem>-<area>-roofline.png achieved as % of the roofline, ours beside the baseline: GEMM
                           TFLOP/s against the dense peak of the row's dtype; bandwidth areas
                           GB/s against HBM peak, with the measured copy bandwidth as a line
                           (against the copy alone where the GPU is not in peaks.py)."""

import os

from . import peaks
from .rows import summarize

COPY_CASE = "copy contiguous float32 "  # elementwise.py's copy: the measured copy bandwidth


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(r, metrics):
    name = r["case"] if metrics == 1 else f"{r['case']} [{r['metric']}]"
    return f"{name} vs {r['baseline']}"


def _barh(plt, labels, series, title, xlabel, ref_lines, log):
    """Horizontal bars, `series` = [(name, values, color)], a vertical line per ref. Log
    scale: ratios, bars grow from 1.0 (parity) left or right, each labelled with its value;
    linear: bars from 0."""
    from matplotlib.ticker import FuncFormatter

    n = len(labels)
    per_row = (0.28 if n <= 40 else 0.17) * max(1, len(series) * 0.6)
    fig, ax = plt.subplots(figsize=(10, 1.4 + per_row * n))
    height = 0.8 / len(series)
    origin = 1.0 if log else 0.0
    for i, (name, values, color) in enumerate(series):
        pos = [j + (i - (len(series) - 1) / 2) * height for j in range(n)]
        widths = [(v - origin) if v else 0 for v in values]
        ax.barh(pos, widths, left=origin, height=height, color=color, label=name)
        if log:
            for y, v in zip(pos, values):
                if v:
                    ax.annotate(
                        f"{v:.2f}x",
                        (v, y),
                        xytext=(3 if v >= 1 else -3, 0),
                        textcoords="offset points",
                        va="center",
                        ha="left" if v >= 1 else "right",
                        fontsize=6,
                    )
    for x, style, text in ref_lines:
        ax.axvline(x, color="black", linestyle=style, linewidth=1, label=text)
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)
    if log:
        ax.set_xscale("log")
        vs = [v for _, values, _ in series for v in values if v]
        lo, hi = min(vs + [0.5]) / 1.4, max(vs + [2.0]) * 1.4
        ax.set_xlim(lo, hi)
        ax.set_xticks([2.0**k for k in range(-10, 11) if lo <= 2.0**k <= hi])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda x, _: ""))
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10, pad=22)
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4, frameon=False)
    fig.tight_layout()
    return fig


def _save(plt, fig, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ratio_chart(plt, area, rows, gpu, path):
    rs = [r for r in rows if r["speedup"] is not None]
    if not rs:
        return None
    metrics = len({r["metric"] for r in rs})
    colors = ["tab:green" if r["speedup"] >= 1 else "tab:red" for r in rs]
    fig = _barh(
        plt,
        [_label(r, metrics) for r in rs],
        [("ours / peer", [r["speedup"] for r in rs], colors)],
        f"{area} on {gpu}: ours / peer (> 1: ours faster)",
        "speedup (log scale)",
        [(1.0, "-", "parity")],
        log=True,
    )
    return _save(plt, fig, path)


def _gbps(r):
    if r["unit"] == "GB/s":
        return r["ours"]
    return r["throughput"] if r["throughput_unit"] == "GB/s" else None


def gemm_roof(r, peak):
    """TFLOP/s attainable: the dtype's dense peak, or less where the row's FLOPs per byte
    times HBM bandwidth is lower (skinny products are bandwidth-bound)."""
    roof = peak["tflops"][r["dtype"]]
    if r["flops"] and r["bytes"]:
        roof = min(roof, r["flops"] / r["bytes"] * peak["hbm_gbps"] / 1e3)
    return roof


def roofline_points(kind, rows, all_rows, gpu):
    """(label, ours achieved, baseline achieved, reference lines, x label) for a chart, or
    None where the area has no roofline here. Achieved values are fractions of the roof."""
    peak = peaks.lookup(gpu)
    if kind == "gemm":
        if peak is None:
            return None
        pts = [
            (r["case"], r["ours"] / gemm_roof(r, peak), r["speedup"])
            for r in rows
            if r["unit"] == "TFLOP/s" and r["dtype"] in peak["tflops"] and r["ours"]
        ]
        return pts, [], f"% of the {peak['label']} roofline: min(dense peak, FLOP/byte x HBM)"
    copy = [
        max(v for v in [r["ours"], *r["peers"].values()] if v is not None)
        for r in all_rows
        if r["area"] == "elementwise" and r["case"].startswith(COPY_CASE) and r["ours"]
    ]
    roof = peak["hbm_gbps"] if peak else max(copy, default=None)
    if roof is None:
        return None
    pts = [(r["case"], _gbps(r) / roof, r["speedup"]) for r in rows if _gbps(r)]
    best = max(copy, default=None)
    refs = [(best / roof, "--", f"best measured copy {best:.0f} GB/s")] if copy and peak else []
    what = f"{peak['label']} HBM {peak['hbm_gbps']:.0f} GB/s" if peak else "best measured copy"
    return pts, refs, f"% of {what}"


def roofline_chart(plt, area, kind, rows, all_rows, gpu, path):
    found = roofline_points(kind, rows, all_rows, gpu)
    if not found or not found[0]:
        return None
    pts, refs, xlabel = found
    ours = [100 * a for _, a, _ in pts]
    base = [100 * a / s if s else None for _, a, s in pts]  # the baseline did the same work
    fig = _barh(
        plt,
        [p[0] for p in pts],
        [("ours", ours, "tab:blue"), ("the row's baseline", base, "tab:gray")],
        f"{area} on {gpu}: achieved vs roofline",
        xlabel,
        [(100.0, "-", "roofline")] + [(100 * x, s, t) for x, s, t in refs],
        log=False,
    )
    return _save(plt, fig, path)


def overview_chart(plt, rows, gpu, path):
    s = {a: v for a, v in summarize(rows).items() if v["geomean_speedup"]}
    if not s:
        return None
    labels = [f"{a} ({v['with_baseline']} rows)" for a, v in s.items()]
    values = [v["geomean_speedup"] for v in s.values()]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in values]
    fig = _barh(
        plt,
        labels,
        [("geomean ours / peer", values, colors)],
        f"pygpukit on {gpu}: geomean speedup against each area's baseline",
        "speedup (log scale)",
        [(1.0, "-", "parity")],
        log=True,
    )
    return _save(plt, fig, path)


def render(rows, out_dir, stem, gpu, rooflines):
    """Writes the charts; returns (paths, message). `rooflines`: {area: kind} of the areas
    that have one. Without matplotlib: ([], why)."""
    try:
        plt = _pyplot()
    except ImportError as e:
        return [], f"charts skipped: matplotlib is not importable ({e})"
    paths = [overview_chart(plt, rows, gpu, os.path.join(out_dir, f"{stem}-overview.png"))]
    for area in dict.fromkeys(r["area"] for r in rows):
        rs = [r for r in rows if r["area"] == area]
        base = os.path.join(out_dir, f"{stem}-{area}")
        paths.append(ratio_chart(plt, area, rs, gpu, base + "-ratio.png"))
        if rooflines.get(area):
            kind = rooflines[area]
            paths.append(roofline_chart(plt, area, kind, rs, rows, gpu, base + "-roofline.png"))
    paths = [p for p in paths if p]
    if not paths:
        return [], "no charts: no row has a baseline or a roofline"
    return paths, f"{len(paths)} chart(s) in {out_dir}"
