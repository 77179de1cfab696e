"""benchmarks/mlp.py end to end on the CPU backend: the forward pass runs, is timed and written
to its JSON row with the FLOP count of the layers."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_smoke_run_writes_its_row(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "mlp.py"), "--device", "cpu", "--m", "8"]
        + ["--d", "16", "--layers", "2", "--reps", "1", "--batch-ms", "0.05"]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = tmp_path.glob("cpu-mlp.json")
    [row] = json.loads(path.read_text())["results"]
    assert (row["m"], row["d"], row["hidden"], row["layers"]) == (8, 16, 64, 2)
    assert row["flops"] == 2 * 2 * (2.0 * 8 * 16 * 64)
    ours = row["ours"]
    assert ours["ms"] > 0 and ours["iters"] >= 1 and ours["spread"] >= 1.0
    assert ours["kernels"] == ["matmul"]  # the CPU kernel fuses the activation and the residual
