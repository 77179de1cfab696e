"""The benchmark scripts' interleaved timing (benchmarks/peers.py interleaved_ms): libraries take
turns round by round, medians and spreads are each library's own, a library that fails is
recorded and dropped; and the bandwidth scripts run end to end on the CPU backend with it."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from peers import interleaved_ms  # noqa: E402


class FakeLib:
    """A library whose batches take the times given, in order, and log when they run."""

    def __init__(self, name, times, log, fail_at=None):
        self.name, self.times, self.log, self.fail_at = name, list(times), log, fail_at

    def time_ms(self, call, iters):
        self.log.append(self.name)
        if self.fail_at is not None and len([x for x in self.log if x == self.name]) > self.fail_at:
            raise RuntimeError("device lost\nmore")
        call()
        return self.times.pop(0)

    def sync(self):
        pass


def test_rounds_alternate_and_medians_are_per_library():
    log, calls = [], []
    a = FakeLib("a", [1.0, 3.0, 2.0], log)
    b = FakeLib("b", [10.0, 10.0, 40.0], log)
    out = interleaved_ms({"a": (a, lambda: calls.append("a")), "b": (b, lambda: None)}, 5, 3)
    assert log == ["a", "b", "a", "b", "a", "b"]  # one batch each per round, in turn
    assert out["a"] == {"ms": 2.0, "spread": 3.0}
    assert out["b"] == {"ms": 10.0, "spread": 4.0}
    assert calls == ["a", "a", "a"]


def test_a_failing_library_is_recorded_and_dropped():
    log = []
    a = FakeLib("a", [1.0, 1.0, 1.0], log)
    b = FakeLib("b", [5.0, 5.0, 5.0], log, fail_at=1)
    out = interleaved_ms({"a": (a, lambda: None), "b": (b, lambda: None)}, 1, 3)
    assert out["a"]["ms"] == 1.0
    assert out["b"] == {"error": "RuntimeError: device lost"}
    assert log == ["a", "b", "a", "b", "a"]  # b not asked again after its failure


@pytest.mark.parametrize("script", ["reduction.py", "elementwise.py"])
def test_bandwidth_scripts_run_on_the_cpu_with_spreads(tmp_path, script):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    args = [
        "--device",
        "cpu",
        "--log2n",
        "10",
        "--iters",
        "2",
        "--reps",
        "2",
        "--out",
        str(tmp_path),
    ]
    if script == "elementwise.py":
        args += ["--overhead-rounds", "1"]
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = tmp_path.glob("cpu-*.json")
    rows = json.loads(path.read_text())["bandwidth"]
    assert rows
    for row in rows:
        assert row["gbps"]["ours"] > 0 and row["spread"]["ours"] >= 1.0, row
