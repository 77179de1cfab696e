"""Where and how the benchmark scripts write their JSON: <out>/<gpu>-sm<XY>-<area><suffix>.json,
by default into benchmarks/results for GPU runs; CPU smoke runs write only when given --out."""

import json
import os

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def file_stem(name, sm, *, cuda):
    """The device part of a results file name: "<gpu>-sm<XY>" (spaces as dashes), or "cpu"."""
    return f"{name.replace(' ', '-')}-sm{sm}" if cuda else "cpu"


def write_result(result, out, props, area, *, cuda, suffix=""):
    """Writes `result` and returns its path, or None for a CPU run without `out` (said on
    stdout). `props` is gp.device_properties() of the device measured."""
    if out is None and cuda:
        out = RESULTS_DIR
    if out is None:
        print("\n(CPU run: no JSON written; pass --out DIR to write one)")
        return None
    name = file_stem(props["name"], props["sm"], cuda=cuda)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{name}-{area}{suffix}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {path}")
    return path
