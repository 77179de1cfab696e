"""benchmarks/scaled_matmul.py end to end on the CPU backend: every recipe runs, writes its JSON
row, and the error column reflects the result (bf16 output of the dequantized product)."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_smoke_run_writes_every_recipe(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scaled_matmul.py"), "--device", "cpu"]
        + ["--reps", "1", "--batch-ms", "0.05", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = tmp_path.glob("cpu-scaled-matmul.json")
    rows = json.loads(path.read_text())["results"]
    assert {x["recipe"] for x in rows} == {"tensor", "rowwise", "deepseek"}
    for x in rows:
        ours = x["ours"]
        assert ours["us"] > 0 and ours["iters"] >= 1 and ours["spread"] >= 1.0, x
        assert ours["max_rel_err"] < 2**-7, x  # one bf16 rounding of the result
        assert x["flops"] == 2.0 * x["m"] * x["n"] * x["k"]
