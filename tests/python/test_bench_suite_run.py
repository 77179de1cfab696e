"""The benchmark suite around the adapters (no GPU): loading results, the combined file, the
comparison with an earlier run, tables, benchmarks/run.py end to end (in-process and as a
subprocess), the subprocess runner (failures, timeouts) and the charts."""

import importlib.util
import io
import json
import os
import subprocess
import sys

import pytest
from bench_suite_data import BENCH, H100, bandwidth_raw, by_case, gemm_raw, write_json
from suite import charts, compare, progress, registry, results, rows, runner, table

# ---------------------------------------------------------------- loading and the combined file


def test_later_file_wins_and_notes(tmp_path):
    write_json(tmp_path, f"{H100}-gemm-old.json", gemm_raw(ours=500.0), mtime=1000)
    write_json(tmp_path, f"{H100}-gemm.json", gemm_raw(ours=750.0), mtime=2000)
    write_json(tmp_path, "notes.json", {"x": 1})
    src = results.load([str(tmp_path)])
    assert list(src.raw["gemm"]) == [f"{H100}-gemm-old.json", f"{H100}-gemm.json"]
    notes = list(src.notes)
    rs, failures = results.normalize(src.raw, notes)
    assert by_case(rs)["bf16 square 4096^3"]["ours"] == 750.0
    assert by_case(rs)["bf16 square 4096^3"]["source"] == f"{H100}-gemm.json"
    assert any("notes.json: no adapter" in n for n in notes)
    assert any("2 row(s) replace" in n for n in notes)
    assert not failures


def test_normalize_failure_is_isolated(tmp_path):
    raw = {"gemm": {"a.json": {"results": [{"section": "square"}]}}, "rng": {"b.json": {}}}
    raw["jit"] = {"c.json": {"launch_us_per_call": {"ours": 1.0}}}
    rs, failures = results.normalize(raw)
    assert set(failures) == {"gemm"} and "a.json: KeyError" in failures["gemm"]
    assert [r["area"] for r in rs] == ["jit"]


def test_combined_round_trip(tmp_path):
    raw = {"gemm": {f"{H100}-gemm.json": gemm_raw()}}
    rs, _ = results.normalize(raw)
    meta = results.device_meta(H100, raw)
    assert meta == {
        "gpu": "NVIDIA H100 80GB HBM3",
        "sm": "90",
        "device": "cuda",
        "driver": None,
        "pygpukit": None,
        "quick": False,
    }
    meta["quick"] = True
    areas = {"gemm": {"status": "loaded"}}
    data = results.combined(meta, H100, areas, rs, raw, settings={"quick": True})
    assert data["suite"] == results.FORMAT and data["stem"] == H100
    assert data["summary"]["gemm"]["with_baseline"] == 2
    path = results.write(json.loads(json.dumps(data)), str(tmp_path), f"{H100}.json")
    src = results.load([path])
    assert src.stem == H100 and src.meta["gpu"] == "NVIDIA H100 80GB HBM3" and src.meta["quick"]
    again, _ = results.normalize(src.raw)
    assert again == rs


# ---------------------------------------------------------------- compare and tables


def row(case, unit, ours, base=None, area="a"):
    r = rows.make_row(case, unit, unit, ours, {"torch": base} if base else None)
    r["area"] = area
    return r


def test_compare_directions_noise_missing_new():
    prev = [
        row("t", "TFLOP/s", 100.0),
        row("m", "ms", 1.0),
        row("n", "GB/s", 100.0),
        row("gone", "ms", 1.0),
        row("lost", "us", 2.0),
        row("up", "us", 2.0),
    ]
    cur = [
        row("t", "TFLOP/s", 90.0),
        row("m", "ms", 1.1),
        row("n", "GB/s", 96.0),
        row("lost", "us", None),
        row("up", "us", 1.0),
        row("fresh", "ms", 1.0),
    ]
    c = compare.compare(cur, prev, 0.05)
    assert [e["case"] for e in c["regressions"]] == ["t", "m"]
    assert c["regressions"][0]["change"] == pytest.approx(-0.10)
    assert c["regressions"][1]["change"] == pytest.approx(1 / 1.1 - 1)
    assert [(e["case"], e["change"]) for e in c["improvements"]] == [("up", 1.0)]
    assert c["unchanged"] == 1
    assert sorted(k[1] for k in c["missing"]) == ["gone", "lost"]
    assert c["new"] == [["a", "fresh", "ms"]]
    assert compare.compare(cur, prev, 0.15)["regressions"] == []
    lines = compare.report(c, "prev.json")
    assert "2 regression(s), 1 improvement(s), 1 within noise, 2 missing, 1 new" in lines[0]
    assert "REGRESSION a: t (TFLOP/s) 100 -> 90 TFLOP/s (-10.0% speed)" in lines[1]
    assert compare.changes_by_key(c)[("a", "up", "us")] == 1.0


def test_table_columns_and_values():
    a = row("copy n=2^28", "GB/s", 3000.0, 2900.0)
    b = row("sort 2^20", "ms", 0.1, 0.12)
    b.update(throughput=1e4, throughput_unit="Melem/s", max_err=3e-4, ok=False)
    rs = [a, b]
    text = table.render("x", rs, rows.summarize(rs)["a"], {("a", "sort 2^20", "ms"): -0.2})
    lines = text.splitlines()
    assert lines[0] == "== x"
    assert lines[1].split() == [
        "case",
        "metric",
        "baseline",
        "base",
        "ours",
        "speedup",
        "throughput",
        "max",
        "err",
        "mean",
        "err",
        "check",
        "vs",
        "previous",
    ]
    assert lines[3].split() == [
        "copy",
        "n=2^28",
        "GB/s",
        "torch",
        "2900",
        "3000",
        "1.03x",
        "-",
        "-",
        "-",
        "-",
    ]
    assert lines[4].split() == [
        "sort",
        "2^20",
        "ms",
        "torch",
        "0.12",
        "0.1",
        "1.20x",
        "1e+04",
        "Melem/s",
        "3.0e-04",
        "-",
        "FAIL",
        "-20.0%",
        "REGRESSED",
    ]
    assert "geomean speedup 1.114x over 2 row(s)" in lines[5]
    assert lines[6] == "FAILED CHECKS: sort 2^20"
    plain = table.render("x", [a])
    assert "check" not in plain and "vs previous" not in plain and "geomean" not in plain


# ---------------------------------------------------------------- run.py end to end


def load_run_module():
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(BENCH, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def results_dir(tmp_path, ours=700.0):
    folder = tmp_path / f"results-{ours:g}"
    folder.mkdir()
    write_json(folder, f"{H100}-gemm.json", gemm_raw(ours=ours))
    write_json(folder, f"{H100}-reduction.json", bandwidth_raw())
    return str(folder)


def test_run_from_results_writes_the_combined_file(tmp_path, capsys):
    run = load_run_module()
    out = tmp_path / "out"
    rc = run.main(["--from-results", results_dir(tmp_path), "--out", str(out), "--no-charts"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "== gemm" in text and "== reduction" in text and "bf16 square 4096^3" in text
    with open(out / f"{H100}.json") as f:
        data = json.load(f)
    assert data["stem"] == H100 and data["gpu"] == "NVIDIA H100 80GB HBM3" and data["sm"] == "90"
    assert data["areas"]["gemm"] == {"status": "loaded", "files": [f"{H100}-gemm.json"]}
    assert data["areas"]["trace-overhead"]["status"] == "missing"
    assert len(data["rows"]) == 5 and data["compare"] is None
    assert data["settings"]["argv"][:1] == ["--from-results"]
    assert data["raw"]["gemm"][f"{H100}-gemm.json"] == gemm_raw()
    assert data["summary"]["reduction"]["min_case"] == "sum full float32 n=2^28 (GB/s)"


def test_run_compare_and_fail_on_regression(tmp_path, capsys):
    run = load_run_module()
    prev_out, cur = tmp_path / "prev", results_dir(tmp_path, ours=600.0)
    assert (
        run.main(["--from-results", results_dir(tmp_path), "--out", str(prev_out), "--no-charts"])
        == 0
    )
    prev = str(prev_out / f"{H100}.json")
    args = ["--from-results", cur, "--out", str(tmp_path / "cur"), "--no-charts"]
    assert run.main(args + ["--compare", prev]) == 0  # reported, not failing
    assert run.main(args + ["--compare", prev, "--fail-on-regression"]) == 2
    text = capsys.readouterr().out
    assert "REGRESSION gemm: bf16 square 4096^3 (TFLOP/s) 700 -> 600 TFLOP/s (-14.3% speed)" in text
    assert "-14.3% REGRESSED" in text
    assert run.main(args + ["--compare", prev, "--fail-on-regression", "--noise", "0.2"]) == 0
    with open(tmp_path / "cur" / f"{H100}.json") as f:
        c = json.load(f)["compare"]
    assert c["against"] == prev and c["noise"] == 0.2 and c["regressions"] == []
    # the same as a subprocess: the exit status scripts and CI see
    cmd = [sys.executable, os.path.join(BENCH, "run.py"), *args, "--compare", prev]
    r = subprocess.run(cmd + ["--fail-on-regression"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "1 regression(s)" in r.stdout


def test_run_keeps_a_quick_run_quick(tmp_path):
    run = load_run_module()
    first, again = tmp_path / "first", tmp_path / "again"
    args = ["--from-results", results_dir(tmp_path), "--out", str(first), "--no-charts"]
    assert run.main(args + ["--quick"]) == 0
    quick = first / f"{H100}-quick.json"
    assert json.loads(quick.read_text())["quick"] is True
    assert run.main(["--from-results", str(quick), "--out", str(again), "--no-charts"]) == 0
    assert [p.name for p in again.iterdir()] == [f"{H100}-quick.json"]


def test_run_bad_arguments(tmp_path, capsys):
    run = load_run_module()
    assert run.main(["--areas", "gemm,nope", "--from-results", str(tmp_path)]) == 2
    assert "unknown area(s) nope" in capsys.readouterr().err
    assert run.main(["--from-results", str(tmp_path)]) == 2
    assert "no benchmark results" in capsys.readouterr().err
    folder = results_dir(tmp_path)
    missing = str(tmp_path / "missing.json")
    assert run.main(["--from-results", folder, "--no-charts", "--compare", missing]) == 2
    assert f"--compare {missing}: [Errno 2]" in capsys.readouterr().err


def test_run_reports_a_file_its_adapter_cannot_read(tmp_path, capsys):
    run = load_run_module()
    folder = results_dir(tmp_path)
    write_json(folder, f"{H100}-jit.json", {"launch_us_per_call": "garbage"})
    rc = run.main(["--from-results", folder, "--out", str(tmp_path / "o"), "--no-charts"])
    assert rc == 1
    assert "jit failed: normalizing" in capsys.readouterr().err


# ---------------------------------------------------------------- running areas as subprocesses

OK_SCRIPT = """
import json, os, sys
out = sys.argv[sys.argv.index("--out") + 1]
print("measuring", flush=True)
with open(os.path.join(out, "cpu-fake-ok.json"), "w") as f:
    json.dump({"value": float(sys.argv[1])}, f)
"""
FAIL_SCRIPT = OK_SCRIPT.replace("cpu-fake-ok", "cpu-fake-fail") + "sys.exit('boom: 3 wrong')\n"
SLOW_SCRIPT = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n"


def fake_adapters(tmp_path):
    def value_rows(raw):
        return [rows.make_row("value", "time", "ms", raw["value"])]

    made = []
    for name, text, args in (
        ("fake-ok", OK_SCRIPT, ("2.5",)),
        ("fake-fail", FAIL_SCRIPT, ("4.0",)),
        ("fake-slow", SLOW_SCRIPT, ()),
        ("fake-absent", None, ()),
    ):
        path = tmp_path / f"{name}.py"
        if text:
            path.write_text(text)
        made.append(
            registry.Adapter(
                area=name,
                normalize=value_rows,
                script=str(path),
                cpu_args=args,
                quick_args=args,
                timeout=(2, 2),
            )
        )
    return made


def test_runner_statuses_and_progress(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    write_json(work, "cpu-stale.json", {"value": 1.0})  # there before: not this run's output
    cfg = runner.RunConfig(work_dir=str(work), stem="cpu", cpu=True, timeout=None)
    stream = io.StringIO()
    bar = progress.TextProgress(4, stream)
    ok, fail, slow, absent = (runner.run_area(a, cfg, bar) for a in fake_adapters(tmp_path))
    assert ok["status"] == "ok" and [os.path.basename(f) for f in ok["files"]] == [
        "cpu-fake-ok.json"
    ]
    assert "measuring" in open(ok["log"]).read()
    assert fail["status"] == "failed" and "exit status 1: boom: 3 wrong" in fail["message"]
    assert [os.path.basename(f) for f in fail["files"]] == ["cpu-fake-fail.json"]
    assert slow["status"] == "timeout" and slow["seconds"] < 30
    assert absent["status"] == "skipped" and "is not present" in absent["message"]
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1/4] fake-ok: running" and lines[1].startswith("[1/4] fake-ok: ok in ")
    assert lines[-1].startswith("[4/4] fake-absent: skipped (")
    gpu_only = registry.Adapter(area="g", normalize=len, script=str(tmp_path / "fake-ok.py"))
    assert runner.command(gpu_only, cfg) == (None, "needs a CUDA device")


def test_run_goes_on_after_a_failure(tmp_path, monkeypatch, capsys):
    run = load_run_module()
    fakes = fake_adapters(tmp_path)
    monkeypatch.setattr(registry, "adapters", lambda: fakes)
    info = {
        "device": "cpu",
        "type": "cpu",
        "gpu": "a CPU",
        "sm": "",
        "driver": 0,
        "pygpukit": "0.0",
        "cuda_status": "none",
    }
    monkeypatch.setattr(runner, "detect", lambda device, env: info)
    out = tmp_path / "out"
    rc = run.main(["--device", "cpu", "--out", str(out), "--plain-progress", "--no-charts"])
    assert rc == 1
    with open(out / "cpu.json") as f:
        data = json.load(f)
    status = {a: s["status"] for a, s in data["areas"].items()}
    assert status == {
        "fake-ok": "ok",
        "fake-fail": "failed",
        "fake-slow": "timeout",
        "fake-absent": "skipped",
    }
    assert {(r["area"], r["ours"]) for r in data["rows"]} == {("fake-ok", 2.5), ("fake-fail", 4.0)}
    err = capsys.readouterr().err
    assert "fake-fail failed: exit status 1: boom: 3 wrong" in err and "fake-slow timeout" in err
    assert "  | measuring\n  | boom: 3 wrong" in err and "  | sleeping" in err  # log tails


def test_detect_reads_the_device_from_a_child():
    info = runner.detect("cpu", dict(os.environ, PYGPUKIT_DEVICE="cpu"))
    assert info["type"] == "cpu" and info["device"] == "cpu" and info["sm"] == ""
    assert info["pygpukit"] and isinstance(info["gpu"], str)


# ---------------------------------------------------------------- charts


def chart_rows():
    raw = {"gemm": {"g.json": gemm_raw()}, "elementwise": {"e.json": bandwidth_raw()}}
    return results.normalize(raw)[0]


def test_roofline_points():
    rs = chart_rows()
    gemm = [r for r in rs if r["area"] == "gemm"]
    pts, refs, label = charts.roofline_points("gemm", gemm, rs, "NVIDIA H100 80GB HBM3")
    assert pts[0] == ("bf16 square 4096^3", pytest.approx(700 / 989.4), pytest.approx(0.875))
    skinny_roof = 2 * 16 * 4096 * 8192 / ((16 * 4096 + 4096 * 8192 + 16 * 8192) * 4) * 3.35
    assert pts[1][1] == pytest.approx(10 / skinny_roof)  # bandwidth-bound: below the fp32 peak
    assert charts.roofline_points("gemm", gemm, rs, "Some GPU") is None
    ew = [r for r in rs if r["area"] == "elementwise"]
    pts, refs, label = charts.roofline_points("bandwidth", ew, rs, "NVIDIA-H200")
    assert pts[0][1] == pytest.approx(3000 / 4800) and "H200 SXM HBM 4800 GB/s" in label
    assert refs == [(pytest.approx(3100 / 4800), "--", "best measured copy 3100 GB/s")]
    pts, refs, label = charts.roofline_points("bandwidth", ew, rs, "Some GPU")
    assert pts[0][1] == pytest.approx(3000 / 3100) and refs == [] and "measured copy" in label


def test_charts_skipped_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    paths, message = charts.render(chart_rows(), str(tmp_path), "x", "NVIDIA H200", {})
    assert paths == [] and message.startswith("charts skipped: matplotlib is not importable")
    assert not list(tmp_path.iterdir())


def test_charts_rendered_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    roofs = {"gemm": "gemm", "elementwise": "bandwidth"}
    paths, message = charts.render(chart_rows(), str(tmp_path), "x", "NVIDIA H200", roofs)
    names = sorted(os.path.basename(p) for p in paths)
    assert names == [
        "x-elementwise-ratio.png",
        "x-elementwise-roofline.png",
        "x-gemm-ratio.png",
        "x-gemm-roofline.png",
        "x-overview.png",
    ]
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert message == f"5 chart(s) in {tmp_path}"
    lonely = [rows.make_row("x", "ms", "ms", 1.0)]
    lonely[0]["area"] = "a"
    assert charts.render(lonely, str(tmp_path / "none"), "x", "NVIDIA H200", {}) == (
        [],
        "no charts: no row has a baseline or a roofline",
    )
    assert not (tmp_path / "none").exists()
