"""benchmarks/scaled_matmul.py end to end on the CPU backend: every recipe runs, writes its JSON
row, and the error column reflects the result (bf16 output of the dequantized product)."""

from helpers import run_bench


def test_smoke_run_writes_every_recipe(tmp_path):
    data = run_bench("scaled_matmul.py", tmp_path)
    assert (tmp_path / "cpu-scaled-matmul.json").exists()
    rows = data["results"]
    assert {x["recipe"] for x in rows} == {"tensor", "rowwise", "deepseek"}
    for x in rows:
        ours = x["ours"]
        assert ours["us"] > 0 and ours["iters"] >= 1 and ours["spread"] >= 1.0, x
        assert ours["max_rel_err"] < 2**-7, x  # one bf16 rounding of the result
        assert x["flops"] == 2.0 * x["m"] * x["n"] * x["k"]
