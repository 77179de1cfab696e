"""benchmarks/gemm_epilogue.py end to end on the CPU backend: every case runs, writes its JSON
row, and the error column reflects the result (a fused product within a few bf16 roundings of
the float64 reference, for every epilogue including both GELU forms)."""

from helpers import run_bench


def test_smoke_run_writes_every_case(tmp_path):
    data = run_bench("gemm_epilogue.py", tmp_path)
    assert (tmp_path / "cpu-gemm-epilogue.json").exists()
    rows = data["results"]
    cases = {(x["layout"], x["epilogue"]) for x in rows}
    epis = {"none", "bias", "bias_relu", "bias_gelu", "bias_gelu_tanh", "bias_silu"}
    assert cases == {(lay, e) for lay in ("kk", "kn") for e in epis}
    for x in rows:
        auto = x["auto"]
        assert auto["us"] > 0 and auto["iters"] >= 1 and auto["spread"] >= 1.0, x
        assert auto["max_rel_err"] < 2**-6, x  # bf16 output: a few roundings
        assert auto["kernels"] == ["matmul"], x  # the CPU backend's one kernel, fused
        for fam in ("sm90", "cublaslt"):  # forced CUDA families refuse arrays on the CPU
            assert x[f"{fam}_status"].startswith("n/a: gemm: backend="), x
