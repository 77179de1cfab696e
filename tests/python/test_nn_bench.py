"""benchmarks/nn.py and benchmarks/transformer.py end to end on the CPU backend (ours alone): the
rows are timed and written with their byte counts and errors against float64."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(script, out, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, str(ROOT / "benchmarks" / script), "--device", "cpu", "--out", str(out)]
    r = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = Path(out).glob("*.json")
    return json.loads(path.read_text())


def test_nn_bench_rows(tmp_path):
    data = run("nn.py", tmp_path, "--log2n", "12", "--cols", "256", "--iters", "2", "--reps", "1")
    ops = {r["op"] for r in data["results"]}
    assert ops == {
        "softmax",
        "log_softmax",
        "layer_norm",
        "rms_norm",
        "rms_norm_residual",
        "swiglu",
        "rope",
    }
    for r in data["results"]:
        assert (r["rows"], r["cols"]) == (16, 256)
        ours = r["ours"]
        assert ours["us"] > 0 and ours["tbps"] > 0 and ours["spread"] >= 1.0
        assert ours["max_abs"] < 0.05, r  # bf16 / float32 results against float64
    swiglu = next(r for r in data["results"] if r["op"] == "swiglu" and r["dtype"] == "float32")
    assert swiglu["bytes"] == int(16 * 256 * 4 * 1.5)  # x read, half of it written


def test_transformer_smoke(tmp_path):
    data = run(
        "transformer.py",
        tmp_path,
        "--layers",
        "1",
        "--dim",
        "64",
        "--heads",
        "4",
        "--kv-heads",
        "2",
        "--hidden",
        "96",
        "--prompt",
        "8",
        "--steps",
        "2",
    )
    cfg = data["config"]
    assert (cfg["layers"], cfg["dim"], cfg["prompt"], cfg["steps"]) == (1, 64, 8, 2)
