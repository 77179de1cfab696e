"""benchmarks/mlp.py end to end on the CPU backend: the forward pass runs, is timed and written
to its JSON row with the FLOP count of the layers."""

from helpers import run_bench


def test_smoke_run_writes_its_row(tmp_path):
    data = run_bench("mlp.py", tmp_path, "--m", "8", "--d", "16", "--layers", "2")
    assert (tmp_path / "cpu-mlp.json").exists()
    [row] = data["results"]
    assert (row["m"], row["d"], row["hidden"], row["layers"]) == (8, 16, 64, 2)
    assert row["flops"] == 2 * 2 * (2.0 * 8 * 16 * 64)
    ours = row["ours"]
    assert ours["ms"] > 0 and ours["iters"] >= 1 and ours["spread"] >= 1.0
    assert ours["kernels"] == ["matmul"]  # the CPU kernel fuses the activation and the residual
