"""The benchmark suite's adapters (benchmarks/suite, no GPU): rows, every area adapter on
synthetic JSON shaped like the scripts' output, and the committed results against the ratios the
scripts computed themselves."""

import glob
import json
import os

import pytest
from bench_suite_data import H100, RESULTS, bandwidth_raw, by_case, gemm_raw, norm
from suite import registry, results, rows

# ---------------------------------------------------------------- rows


def test_direction_and_speedup():
    assert rows.higher_is_better("TFLOP/s") and not rows.higher_is_better("ms")
    with pytest.raises(ValueError, match="furlongs"):
        rows.higher_is_better("furlongs")
    assert rows.ratio(2.0, 4.0, True) == 0.5
    assert rows.ratio(2.0, 4.0, False) == 2.0
    assert rows.ratio(None, 4.0, True) is None and rows.ratio(0.0, 4.0, False) is None
    r = rows.make_row("c", "time", "ms", 2.0, {"torch": None, "CuPy": 3.0, "x": 1.0})
    assert (r["baseline"], r["baseline_value"], r["speedup"]) == ("CuPy", 3.0, 1.5)
    r = rows.make_row("c", "time", "ms", 2.0, {"x": float("nan"), "y": "err", "z": 1.0})
    assert r["peers"] == {"x": None, "y": None, "z": 1.0} and r["baseline"] == "z"
    with pytest.raises(TypeError, match="bogus"):
        rows.make_row("c", "time", "ms", 1.0, bogus=1)


def test_summarize_geomean_and_worst():
    rs = [
        rows.make_row(c, "GB/s", "GB/s", o, {"torch": b})
        for c, o, b in (("a", 2.0, 1.0), ("b", 1.0, 2.0), ("c", 3.0, None))
    ]
    for r in rs:
        r["area"] = "x"
    rs[2]["ok"] = False
    s = rows.summarize(rs)["x"]
    assert s["rows"] == 3 and s["with_baseline"] == 2
    assert s["geomean_speedup"] == pytest.approx(1.0)
    assert (s["min_speedup"], s["min_case"]) == (0.5, "b (GB/s)")
    assert s["failed_checks"] == ["c"]


# ---------------------------------------------------------------- adapters


def test_gemm_adapter():
    rs = by_case(norm("gemm", gemm_raw()))
    sq, llm = rs["bf16 square 4096^3"], rs["fp32 llm 16x4096x8192"]
    assert (sq["baseline"], sq["baseline_value"]) == ("cuBLASLt", 800.0)
    assert sq["speedup"] == pytest.approx(700 / 800) and sq["peers"]["torch"] == 640.0
    assert (sq["max_err"], sq["mean_err"], sq["dtype"]) == (3e-4, 2e-5, "bf16")
    assert sq["bytes"] == 3 * 4096 * 4096 * 2 and sq["throughput"] is None
    assert (llm["baseline"], llm["speedup"]) == ("torch", pytest.approx(1.25))
    assert (llm["throughput"], llm["throughput_unit"]) == (2.5, "TB/s")
    assert llm["bytes"] == (16 * 4096 + 4096 * 8192 + 16 * 8192) * 4
    assert "bf16 square 4096^3 B^T" in by_case(norm("gemm", gemm_raw("t")))


def test_elementwise_adapter():
    raw = bandwidth_raw(
        overhead_us_per_call={"ours": 8.0, "torch": 10.0, "cupy": 12.0},
        gelu_fusion={
            "ours unfused": {"ms": 2.0, "gbps": 270.0},
            "ours fused": {"ms": 0.2, "gbps": 2900.0},
            "torch unfused": {"ms": 2.1, "gbps": 260.0},
            "cupy fused": {"ms": 0.3, "gbps": 1800.0},
        },
        first_call_ms={"compile": 200.0, "disk_hit_fresh_process": 1.0},
    )
    rs = by_case(norm("elementwise", raw))
    copy = rs["copy contiguous float32 n=2^28"]
    assert (copy["baseline"], copy["speedup"]) == ("torch", pytest.approx(3000 / 2900))
    assert copy["peers"]["CuPy"] == 3100.0 and copy["higher_is_better"]
    bf = rs["add strided bfloat16 n=2^28"]
    assert "CuPy" not in bf["peers"] and bf["speedup"] == 1.5
    ov = rs["16-element add, per call"]
    assert not ov["higher_is_better"] and ov["speedup"] == pytest.approx(10 / 8)
    fused = rs["tanh-GELU fused float32 n=2^26"]
    assert (fused["baseline"], fused["speedup"]) == ("CuPy fuse", pytest.approx(1.5))
    assert fused["peers"]["torch eager"] == 2.1 and fused["throughput"] == 2900.0
    unfused = rs["tanh-GELU unfused float32 n=2^26"]
    assert (unfused["baseline"], unfused["baseline_value"]) == ("torch", 2.1)
    compile_row = rs["first call of a new kernel: compile"]
    assert compile_row["ours"] == 200.0 and compile_row["baseline"] is None


def test_reduction_adapter_attaches_sum_error():
    raw = bandwidth_raw(float32_sum_relative_error={"ours": 4e-9, "torch": 2e-7})
    rs = by_case(norm("reduction", raw))
    assert rs["sum full float32 n=2^28"]["max_err"] == 4e-9
    assert rs["sum full float32 n=2^28"]["speedup"] == pytest.approx(0.8)
    assert rs["copy contiguous float32 n=2^28"]["max_err"] is None


def test_sorting_adapter():
    raw = {
        "cases": [
            {
                "op": "sort",
                "dtype": "float32",
                "shape": [1 << 20],
                "n": 1 << 20,
                "ms": {"ours": 0.1, "torch": 0.12, "cupy": None},
                "melem_per_s": {"ours": 1e4},
                "ok": True,
            },
            {
                "op": "searchsorted",
                "dtype": "float32",
                "shape": [1 << 20],
                "n": 1 << 20,
                "sorted_n": 1 << 24,
                "ms": {"ours": None, "torch": 0.15},
                "melem_per_s": {},
                "ok": False,
            },
            {
                "op": "sort",
                "dtype": "float32",
                "shape": [4096, 1024],
                "n": 1 << 22,
                "ms": {"ours": 0.4, "torch": 0.2},
                "ok": True,
            },
        ]
    }
    rs = by_case(norm("sorting", raw))
    s = rs["sort float32 2^20"]
    assert s["speedup"] == pytest.approx(1.2) and s["peers"] == {"torch": 0.12, "CuPy": None}
    assert (s["throughput"], s["throughput_unit"], s["ok"]) == (1e4, "Melem/s", True)
    bad = rs["searchsorted float32 2^20 in 2^24"]
    assert bad["ours"] is None and bad["speedup"] is None and bad["ok"] is False
    assert rs["sort float32 4096x1024"]["speedup"] == pytest.approx(0.5)


def test_rng_adapter_peer_error():
    raw = {
        "n": 1 << 26,
        "cases": {
            "random f32": {
                "ours": {"ms": 0.16, "gbps": 1700.0},
                "torch": {"ms": 0.12, "gbps": 1.0},
                "cupy": {"ms": 0.32, "gbps": 1.0},
            },
            "permutation": {"ours": {"ms": 4.0, "gbps": 30.0}, "cupy": {"error": "no such"}},
        },
    }
    rs = by_case(norm("rng", raw))
    assert rs["random f32 n=2^26"]["speedup"] == pytest.approx(0.75)
    assert rs["random f32 n=2^26"]["throughput"] == 1700.0
    perm = rs["permutation"]
    assert perm["peers"] == {"CuPy": None} and perm["baseline"] is None


def test_jit_adapter():
    raw = {
        "first_launch_ms": {"compile": 14.0, "memory_hit": 0.07},
        "launch_us_per_call": {"ours": 8.0, "cupy": 6.0, "torch_add": 10.0},
    }
    rs = by_case(norm("jit", raw))
    launch = rs["16-element user kernel, per launch"]
    assert (launch["baseline"], launch["speedup"]) == ("CuPy RawKernel", pytest.approx(0.75))
    assert launch["peers"]["torch add"] == 10.0
    assert rs["first launch: compile"]["ours"] == 14.0


def test_memory_adapter():
    raw = {
        "alloc": [
            {"case": "empty 1 MiB", "ours_us": 1.0, "torch_us": 3.0, "cupy_us": 2.0},
            {"case": "cuMemAlloc+cuMemFree (ctypes)", "driver_us": 4.0},
        ],
        "frag": {
            "loguniform": {
                "results": [
                    {"library": "pygpukit", "ratio": 0.75, "us_per_op": 2.0},
                    {"library": "pygpukit compact", "ratio": 0.9, "us_per_op": 5.0},
                    {"library": "torch", "ratio": 0.8, "us_per_op": 4.0},
                ]
            }
        },
        "transfer": {
            "bytes": 1 << 30,
            "checks": {"gp d2h": True, "gp h2d": False, "torch d2h": True},
            "results": [{"case": "h2d pageable", "ours_gbs": 40.0, "torch_gbs": 8.0}],
        },
        "spill": {
            "bytes": 1 << 30,
            "spill_gbs": 50.0,
            "page_in_gbs": 45.0,
            "round_trip_gbs": 47.0,
            "bit_exact": True,
        },
    }
    rs = norm("memory", raw)
    alloc = by_case(rs)["empty 1 MiB"]
    assert alloc["speedup"] == 3.0 and alloc["peers"]["cuMemAlloc+cuMemFree (ctypes)"] == 4.0
    frag = by_case(rs, "live/reserved at peak")["fragmentation, loguniform sizes"]
    assert frag["peers"] == {"torch": 0.8} and frag["speedup"] == pytest.approx(0.9375)
    per_op = by_case(rs, "host time per op")["fragmentation, loguniform sizes"]
    assert per_op["speedup"] == 2.0
    h2d = by_case(rs)["h2d pageable, 1024 MiB"]
    assert h2d["speedup"] == 5.0 and h2d["ok"] is False  # one of our copies was not exact
    assert by_case(rs)["page_in, 1024 MiB"]["ours"] == 45.0


def test_scheduler_adapter():
    def mode(m, p50, p99, be=None):
        return {"mode": m, "p50_us": p50, "p99_us": p99, "be_tflops": be}

    raw = {
        "results": [
            mode("alone", 50.0, 130.0),
            {"mode": "be_alone", "be_tflops": 660.0},
            mode("sched", 200.0, 400.0, 550.0),
            mode("torch_alone", 55.0, 169.0),
            mode("torch_plain_prio", 1500.0, 1800.0, 640.0),
        ]
    }
    rs = norm("scheduler", raw)
    assert {r["case"] for r in rs} == {"alone", "be_alone", "sched"}
    p99 = by_case(rs, "p99 latency")
    assert p99["sched"]["baseline"] == "torch plain_prio"
    assert p99["sched"]["speedup"] == pytest.approx(4.5)
    assert p99["alone"]["baseline_value"] == 169.0
    be = by_case(rs, "best-effort")
    assert be["sched"]["speedup"] == pytest.approx(550 / 640) and be["be_alone"]["speedup"] is None


def test_gbench_adapter_medians_and_units():
    def b(name, t, unit, kind="aggregate", agg="median", **extra):
        return {
            "name": name,
            "run_name": name.split("_median")[0],
            "run_type": kind,
            "aggregate_name": agg,
            "real_time": t,
            "time_unit": unit,
            **extra,
        }

    raw = {
        "benchmarks": [
            b("BM_A", 9.0, "ns", "iteration", None),
            b("BM_A_mean", 5.0, "ns", agg="mean"),
            b("BM_A_median", 2000.0, "ns", items_per_second=5e5),
            b("BM_T_median", 1.5, "ms", bytes_per_second=5e10, label="pinned"),
        ]
    }
    rs = by_case(norm("memory-cpp", raw))
    assert set(rs) == {"BM_A", "BM_T (pinned)"}
    assert rs["BM_A"]["ours"] == pytest.approx(2.0) and rs["BM_A"]["unit"] == "us"
    assert rs["BM_A"]["throughput_unit"] == "items/s"
    assert rs["BM_T (pinned)"]["ours"] == pytest.approx(1500.0)
    assert rs["BM_T (pinned)"]["throughput"] == pytest.approx(50.0)
    plain = norm("scheduler-cpp", {"benchmarks": [b("BM_S", 3.0, "us", "iteration", None)]})
    assert plain[0]["ours"] == 3.0


def test_trace_overhead_adapter():
    raw = {
        "budget": 0.02,
        "cases": [
            {"case": "10k adds", "off_us": 3.0, "on_us": 3.03},
            {"name": "10k copies", "off_ms": 1.0, "on_ms": 1.05},
        ],
    }
    rs = by_case(norm("trace-overhead", raw))
    adds = rs["10k adds"]
    assert (adds["baseline"], adds["ok"]) == ("tracing off", True)
    assert adds["speedup"] == pytest.approx(3.0 / 3.03)
    assert rs["10k copies"]["unit"] == "ms" and rs["10k copies"]["ok"] is False
    with pytest.raises(ValueError, match="on_us"):
        norm("trace-overhead", {"cases": [{"case": "x", "on": 1}]})


# ---------------------------------------------------------------- the committed results


def committed(pattern):
    return sorted(glob.glob(os.path.join(RESULTS, pattern)))


def combined(path):
    """Whether a results file is a combined suite run (not one area's)."""
    with open(path) as f:
        return "suite" in json.load(f)


def test_every_committed_file_has_an_adapter_or_is_legacy():
    seen = set()
    for path in committed("*.json"):
        with open(path) as f:
            if "suite" in json.load(f):
                continue  # a combined run (test_the_committed_quick_run)
        m = results.AREA_FILE.match(os.path.basename(path))
        area = m and registry.area_of(m["rest"])
        if area is None:
            assert os.path.basename(path).endswith("-matmul.json"), path  # pre-gemm.py format
            continue
        seen.add(area)
        with open(path) as f:
            rs = registry.by_area()[area].normalize(json.load(f))
        assert rs, path
        assert all(r["ours"] is None or r["ours"] >= 0 for r in rs)
    assert {"gemm", "elementwise", "reduction", "sorting", "rng", "jit", "memory"} <= seen
    assert {"memory-cpp", "launch-cpp", "scheduler", "scheduler-cpp"} <= seen


def test_the_committed_quick_run():
    (path,) = [p for p in committed("*-quick.json") if combined(p)]
    with open(path) as f:
        data = json.load(f)
    src = results.load([path])
    assert set(src.raw) == set(registry.by_area())  # every area ran
    rs, failures = results.normalize(src.raw)
    assert not failures and rs
    assert {a for a, st in data["areas"].items() if st["status"] not in ("ok", "loaded")} == set()
    overhead = [r for r in rs if r["area"] == "trace-overhead"]
    assert len(overhead) == 3 and all(r["ok"] is not None for r in overhead)
    charts_dir = os.path.join(RESULTS, "charts")
    stem = os.path.basename(path)[: -len(".json")]
    assert os.path.exists(os.path.join(charts_dir, f"{stem}-overview.png"))


def test_committed_gemm_speedups_match_the_script_ratios():
    for path in committed("*-gemm*.json"):
        m = results.AREA_FILE.match(os.path.basename(path))
        if registry.area_of(m["rest"]) != "gemm":
            continue  # gemm-epilogue has its own adapter
        with open(path) as f:
            raw = json.load(f)
        rs = registry.by_area()["gemm"].normalize(raw)
        assert len(rs) == len(raw["results"])
        for r, src in zip(rs, raw["results"]):
            assert r["baseline"] == "cuBLASLt"
            assert r["speedup"] == pytest.approx(src["ratio_vs_cublaslt"], rel=1e-12)
            assert r["ours"] == src["ours_tflops"]


def test_committed_time_and_bandwidth_speedups_match_the_script_ratios():
    with open(os.path.join(RESULTS, f"{H100}-sorting.json")) as f:
        raw = json.load(f)
    for r, src in zip(norm("sorting", raw), raw["cases"]):
        assert r["speedup"] == pytest.approx(src["speedup"]["torch"], rel=1e-12)
    with open(os.path.join(RESULTS, f"{H100}-memory.json")) as f:
        raw = json.load(f)
    rs = by_case(norm("memory", raw))
    alloc = raw["alloc"][0]
    assert rs[alloc["case"]]["speedup"] == pytest.approx(alloc["ratio_vs_torch"], rel=1e-12)
    for t in raw["transfer"]["results"]:
        r = rs[f"{t['case']}, 1024 MiB"]
        assert r["speedup"] == pytest.approx(t["ratio_vs_torch"], rel=1e-12) and r["ok"]
    with open(os.path.join(RESULTS, f"{H100}-elementwise.json")) as f:
        raw = json.load(f)
    copy = by_case(norm("elementwise", raw))["copy contiguous float32 n=2^28"]
    g = raw["bandwidth"][0]["gbps"]
    assert copy["speedup"] == pytest.approx(g["ours"] / g["torch"])


def test_loading_the_committed_folder():
    src = results.load([RESULTS], gpu="h100")
    assert src.stem == H100
    assert any("NVIDIA-H200-sm90" in n for n in src.notes)
    assert any("-matmul.json: no adapter" in n for n in src.notes)
    assert src.meta["gpu"] == "NVIDIA H100 80GB HBM3" and src.meta["sm"] == "90"
    rs, failures = results.normalize(src.raw)
    assert not failures
    assert len({rows.key(r) for r in rs}) == len(rs)
    h200 = results.load([RESULTS], gpu="h200")
    assert h200.stem == "NVIDIA-H200-sm90" and set(h200.raw) == set(registry.by_area())
    with pytest.raises(ValueError, match="no results for GPU 'A100'"):
        results.load([RESULTS], gpu="A100")
