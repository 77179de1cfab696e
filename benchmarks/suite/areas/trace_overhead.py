"""benchmarks/trace_overhead.py (issue 8's tracer; the suite skips the area while the script is
absent): the cost of always-on tracing on loops of tiny ops, tracing on beside tracing off.

The JSON this adapter reads (keep the script's output to it, or change both together):
  {"gpu": ..., "sm": ..., "budget": 0.02,                  (optional: the allowed overhead)
   "cases": [{"case": "10k tiny adds", "off_us": 3.1, "on_us": 3.15}, ...]}
times per op, `_ms` instead of `_us` accepted; "results" for "cases" and "name" for "case" too.
Row: time per op with tracing on as ours, tracing off as the baseline (speedup = off / on, so
0.98 is a 2% overhead); `ok` says whether the overhead (the case's "overhead" where the script
gives it: the median of paired loops; else on / off - 1) is within the budget when one is given.
The script is run with --out DIR, plus --quick for a quick run."""

from ..registry import Adapter
from ..rows import make_row


def times(c):
    for unit in ("us", "ms"):
        if f"on_{unit}" in c and f"off_{unit}" in c:
            return c[f"on_{unit}"], c[f"off_{unit}"], unit
    raise ValueError(f"trace-overhead case without on_us/off_us (or _ms): {sorted(c)}")


def normalize(raw):
    budget = raw.get("budget")
    rows = []
    for c in raw.get("cases", raw.get("results", [])):
        on, off, unit = times(c)
        overhead = c.get("overhead", on / off - 1 if off else None)
        ok = None if budget is None or overhead is None else overhead <= budget
        name = c.get("case", c.get("name"))
        rows.append(make_row(name, "time per op", unit, on, {"tracing off": off}, ok=ok))
    return rows


ADAPTER = Adapter(
    area="trace-overhead",
    normalize=normalize,
    script="trace_overhead.py",
    quick_args=("--quick",),
    aliases=("trace_overhead",),
    order=90,
)
