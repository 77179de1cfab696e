"""benchmarks/grouped_matmul.py end to end on the CPU backend: the groups run, are checked
against float64, timed and written to a JSON row with their sizes and launches."""

from helpers import run_bench


def test_smoke_run_writes_its_row(tmp_path):
    data = run_bench("grouped_matmul.py", tmp_path)
    assert (tmp_path / "cpu-grouped-matmul.json").exists()
    [row] = data["results"]
    assert (row["experts"], row["rows"], row["k"], row["n"]) == (5, 70, 64, 48)
    assert sum(row["group_rows"]) == 70 and len(row["group_rows"]) == 5
    assert row["flops"] == 2.0 * 70 * 64 * 48
    t = row["ours"]  # (no cuBLASLt on the CPU)
    assert t["us"] > 0 and t["iters"] >= 1 and t["spread"] >= 1.0
    assert t["max_rel_err"] < 2.0**-7  # bf16 outputs
    # The CPU backend runs one product per non-empty group either way.
    nonempty = sum(1 for s in row["group_rows"] if s > 0)
    assert sum(row["ours_kernels"].values()) == nonempty
