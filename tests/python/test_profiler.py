"""gp.profiler: the always-on records, profiling sessions (per-kernel table, memory timeline,
Chrome trace), ring wrap-around, turning tracing off, and gp.profiler.benchmark."""

import json
import threading
import time

import numpy as np
import pytest

import pygpukit as gp

launch_kinds = {"kernel", "host_task", "library"}


def launches(prof, name=None):
    return [e for e in prof.events if e.kind in launch_kinds and (name is None or e.name == name)]


def test_session_records_each_launch_with_its_device_time():
    a = gp.asarray(np.arange(12, dtype=np.float32))
    with gp.profiler.profile() as prof:
        b = gp.exp(a)
        c = b + 1
        d = gp.sum(c)
    np.testing.assert_allclose(gp.to_numpy(d), np.sum(np.exp(np.arange(12)) + 1), rtol=1e-5)
    names = [e.name for e in launches(prof)]
    assert names[:2] == ["exp", "add"]
    assert any("sum" in n for n in names[2:])
    seqs = [e.seq for e in prof.events]
    assert len(set(seqs)) == len(seqs)
    for thread in {e.thread for e in prof.events}:
        mine = [e.seq for e in prof.events if e.thread == thread]
        assert mine == sorted(mine)
    for e in launches(prof):
        assert e.gpu_ms is not None and e.gpu_ms >= 0
        assert e.host_ms >= 0
        assert e.device == str(a.device)
    starts = [e.start_ms for e in prof.events]
    assert starts == sorted(starts)


def test_gpu_times_tell_a_long_launch_from_a_short_one():
    # Big enough that its kernel outlasts a tiny one's event-to-event time, launch latency
    # included (4M elements took ~13 us on an H200, about what a 4-element launch measures).
    big = gp.ones((1 << 24,))
    small = gp.ones((4,))
    with gp.profiler.profile() as prof:
        for _ in range(3):
            gp.sin(big)
            gp.cos(small)
    k = prof.kernels()
    assert k["sin"]["calls"] == 3 and k["cos"]["calls"] == 3
    assert k["sin"]["gpu_total_ms"] > k["cos"]["gpu_total_ms"]
    s = k["sin"]
    assert s["gpu_p50_ms"] <= s["gpu_p99_ms"] * (1 + 1e-9)
    assert s["gpu_mean_ms"] == pytest.approx(s["gpu_total_ms"] / 3)
    table = prof.summary()
    assert table.splitlines()[2].startswith("sin")  # largest total first
    assert "cos" in table


def test_without_gpu_timing_only_host_records():
    x = gp.ones((8,))
    with gp.profiler.profile(gpu_timing=False) as prof:
        x * 2
    (e,) = launches(prof, "multiply")
    assert e.gpu_ms is None
    assert prof.kernels()["multiply"]["gpu_total_ms"] is None


def test_memory_records_and_timeline_follow_the_pool():
    gp.synchronize()
    with gp.profiler.profile() as prof:
        x = gp.empty((1000,), dtype=gp.float64)
        del x
    mem = [e for e in prof.events if e.kind in ("alloc", "free")]
    assert [e.kind for e in mem][:2] == ["alloc", "free"]
    alloc, free = mem[0], mem[1]
    assert alloc.bytes == free.bytes == 8000
    assert alloc.allocated - free.allocated >= 8000
    assert alloc.reserved >= alloc.allocated
    timeline = prof.memory_timeline()
    assert timeline[0] == (alloc.start_ms, alloc.allocated, alloc.reserved, alloc.device)
    assert all(p[0] <= q[0] for p, q in zip(timeline, timeline[1:]))


def test_chrome_trace_is_valid_json_with_the_expected_events(tmp_path):
    x = gp.ones((16,))
    with gp.profiler.profile() as prof:
        y = gp.sqrt(x)
        del y
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X" and e["name"] == "sqrt"]
    assert {e["cat"] for e in spans} == {launches(prof, "sqrt")[0].kind, "gpu"}
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] >= 0
    assert any(e["ph"] == "C" and "allocated" in e["args"] for e in events)
    assert any(e["ph"] == "M" for e in events)
    assert all(isinstance(e.get("tid", 0), int) for e in events)


def test_device_spans_of_a_stream_do_not_overlap_in_the_chrome_trace():
    big = gp.ones((1 << 20,))
    with gp.profiler.profile() as prof:
        for _ in range(5):
            gp.exp(big)
    spans = [e for e in prof.chrome_trace()["traceEvents"] if e.get("cat") == "gpu"]
    assert len(spans) == 5
    spans.sort(key=lambda e: e["ts"])
    for a, b in zip(spans, spans[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 2e-3  # exported to the ns


def test_overlapping_sessions_both_get_device_times():
    x = gp.ones((64,))
    with gp.profiler.profile() as outer:
        gp.sin(x)
        with gp.profiler.profile() as inner:
            gp.cos(x)
        gp.tan(x)
    assert launches(inner, "cos")[0].gpu_ms is not None
    for name in ("sin", "cos", "tan"):
        assert launches(outer, name)[0].gpu_ms is not None, name
    with pytest.raises(ValueError, match="sort_by"):
        outer.summary(sort_by="nope")


def test_decorator_keeps_the_latest_call():
    prof = gp.profiler.profile()

    @prof
    def step(v):
        return gp.negative(v)

    x = gp.ones((4,))
    out = step(x)
    np.testing.assert_array_equal(gp.to_numpy(out), -np.ones(4, np.float32))
    assert [e.name for e in launches(prof.last)] == ["negative"]
    step(x)
    step(x)
    assert len(launches(prof.last, "negative")) == 1  # each call is its own session


def test_sessions_do_not_nest_on_one_object():
    prof = gp.profiler.profile()
    with prof:
        with pytest.raises(RuntimeError, match="already open"):
            prof.__enter__()


def test_records_of_other_threads_are_collected():
    x = gp.ones((8,))
    with gp.profiler.profile() as prof:
        gp.negative(x)
        t = threading.Thread(target=lambda: gp.abs(x))
        t.start()
        t.join()
    (other,) = launches(prof, "abs")
    (main,) = launches(prof, "negative")
    assert other.thread != main.thread
    assert other.gpu_ms is not None


def test_off_means_no_records():
    x = gp.ones((8,))
    assert gp.profiler.enabled()
    gp.profiler.set_enabled(False)
    try:
        with gp.profiler.profile() as prof:
            x + x
    finally:
        gp.profiler.set_enabled(True)
    assert prof.events == []


def test_a_full_ring_keeps_the_newest_records_and_counts_the_rest():
    saved = gp.profiler.capacity()
    before = gp.profiler.dropped()
    x = gp.ones((4,))
    out = []  # the results stay alive: the thread records only allocations and launches
    gp.profiler.set_capacity(8)  # rings of threads that start recording now
    try:
        with gp.profiler.profile(gpu_timing=False) as prof:
            t = threading.Thread(target=lambda: out.extend(gp.floor(x) for _ in range(30)))
            t.start()
            t.join()
    finally:
        gp.profiler.set_capacity(saved)
    (thread,) = {e.thread for e in launches(prof, "floor")}
    kept = [e for e in prof.events if e.thread == thread]
    # 30 allocations and 30 launches: the newest 8 records are the last 4 pairs.
    assert [e.kind for e in kept][::2] == ["alloc"] * 4
    assert [e.name for e in kept][1::2] == ["floor"] * 4
    assert gp.profiler.dropped() - before >= 52
    with pytest.raises(ValueError, match="at least 1"):
        gp.profiler.set_capacity(0)


def test_benchmark_times_calls_with_events():
    x = gp.ones((1 << 16,))
    r = gp.profiler.benchmark(gp.sin, x, warmup=1, repeat=7)
    assert len(r.times_ms) == 7
    assert r.min_ms <= r.p10_ms <= r.median_ms <= r.p90_ms <= r.p99_ms <= r.max_ms
    assert r.mean_ms == pytest.approx(sum(r.times_ms) / 7)
    assert all(t >= 0 for t in r.times_ms)
    slow = gp.profiler.benchmark(lambda: time.sleep(0) or gp.sin(gp.ones((1 << 21,))), repeat=3)
    assert slow.median_ms > 0
    flushed = gp.profiler.benchmark(gp.sin, x, repeat=3, flush_l2=True)
    assert len(flushed.times_ms) == 3


@pytest.mark.parametrize("kw", [{"repeat": 0}, {"warmup": -1}])
def test_benchmark_rejects_bad_counts(kw):
    with pytest.raises(ValueError, match="benchmark"):
        gp.profiler.benchmark(lambda: None, **kw)


def test_ops_declare_their_bytes_and_flops():
    n = 1000
    a = gp.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
    row = gp.asarray(np.ones((1,), dtype=np.float32))
    m, k, p = 24, 40, 16
    A = gp.asarray(np.random.default_rng(1).random((m, k), dtype=np.float32))
    B = gp.asarray(np.random.default_rng(2).random((k, p), dtype=np.float32))
    with gp.profiler.profile() as prof:
        a * a  # two float32 reads, one write per element
        a + row  # the broadcast operand is read once: 4 bytes
        gp.sum(a)
        C = A @ B
    np.testing.assert_allclose(gp.to_numpy(C), gp.to_numpy(A) @ gp.to_numpy(B), rtol=1e-4)
    (mul,) = launches(prof, "multiply")
    assert (mul.bytes, mul.flops) == (3 * 4 * n, n)
    (add,) = launches(prof, "add")
    assert add.bytes == 2 * 4 * n + 4
    sums = [e for e in launches(prof) if "sum" in e.name and e.bytes > 0]
    assert sums and sums[0].bytes == 4 * n + 4 and sums[0].flops == n
    mm = [e for e in launches(prof) if e.flops == 2 * m * k * p]
    assert len(mm) == 1, [(e.name, e.flops) for e in launches(prof)]
    assert mm[0].bytes == 4 * (m * k + k * p + m * p)
    row = prof.kernels()[mm[0].name]
    assert row["flops"] == 2 * m * k * p
    assert row["tflops"] == pytest.approx(2 * m * k * p / (row["gpu_total_ms"] * 1e-3) / 1e12)
    mrow = prof.kernels()["multiply"]
    assert mrow["gbps"] == pytest.approx(3 * 4 * n / (mrow["gpu_total_ms"] * 1e-3) / 1e9)
    table = prof.summary(sort_by="gbps")
    assert "TFLOP/s" in table.splitlines()[0] and "GB/s" in table.splitlines()[0]


def test_copies_are_recorded_with_their_bytes():
    host_data = np.arange(4096, dtype=np.float64)
    with gp.profiler.profile() as prof:
        x = gp.asarray(host_data)
        y = x.copy()
        back = gp.to_numpy(y)
    np.testing.assert_array_equal(back, host_data)
    copies = {e.name: e for e in prof.events if e.kind == "copy"}
    assert set(copies) >= {"copy_h2d", "copy_d2d", "copy_d2h"}, sorted(copies)
    for e in copies.values():
        assert e.bytes == host_data.nbytes
        assert e.host_ms >= 0
    assert copies["copy_d2d"].gpu_ms is not None  # a device copy is timed like a launch
    assert prof.kernels()["copy_d2d"]["kind"] == "copy"
    order = [e.name for e in prof.events if e.kind == "copy"]
    assert order.index("copy_h2d") < order.index("copy_d2d") < order.index("copy_d2h")


def test_scheduler_task_transitions_are_recorded():
    with gp.scheduler.Scheduler() as sched:
        sched.add_tenant("traced-tenant", "best_effort")
        with gp.profiler.profile() as prof:
            fut = sched.submit("traced-tenant", lambda: gp.sum(gp.ones((8,))))
            fut.result(timeout=30)
            sched.drain()
    mine = [e for e in prof.events if e.kind == "task" and e.task == fut.id]
    assert [(e.from_state, e.to_state) for e in mine] == [
        ("pending", "admitted"),
        ("admitted", "running"),
        ("running", "completed"),
    ]
    assert all(e.name == "traced-tenant" for e in mine)
    instants = [e for e in prof.chrome_trace()["traceEvents"] if e.get("cat") == "task"]
    assert any(e["args"]["to"] == "completed" and e["args"]["task"] == fut.id for e in instants)


def test_ranges_nest_and_span_their_work():
    x = gp.ones((32,))
    with gp.profiler.profile(name="session") as prof:
        with gp.profiler.range("outer"):
            gp.exp(x)
            with gp.profiler.range("inner"):
                gp.log(x)

    @gp.profiler.range("decorated")
    def f():
        return gp.sin(x)

    with gp.profiler.profile() as prof2:
        f()
    ranges = {e.name: e for e in prof.events if e.kind == "range"}
    assert set(ranges) == {"outer", "inner", "session"}
    outer, inner, session = ranges["outer"], ranges["inner"], ranges["session"]
    (exp,) = launches(prof, "exp")
    (log,) = launches(prof, "log")
    end = lambda e: e.start_ms + e.host_ms  # noqa: E731
    assert outer.start_ms <= exp.start_ms and end(log) <= end(inner) <= end(outer)
    assert session.start_ms <= outer.start_ms and end(outer) <= end(session)
    assert inner.start_ms >= end(exp)
    assert [e.name for e in prof2.events if e.kind == "range"] == ["decorated"]
    with gp.profiler.profile(name=7) as prof3:  # any name is taken as its str()
        pass
    assert [e.name for e in prof3.events if e.kind == "range"] == ["7"]
    spans = [e for e in prof.chrome_trace()["traceEvents"] if e.get("cat") == "range"]
    assert {e["name"] for e in spans} == {"outer", "inner", "session"}


def test_a_pop_without_a_range_is_an_error():
    with pytest.raises(RuntimeError, match="without an open range"):
        gp._core._trace.pop_range()


def test_names_are_escaped_in_the_chrome_trace():
    x = gp.ones((4,))
    name = 'quote " backslash \\ newline \n tab \t end'
    with gp.profiler.profile() as prof:
        with gp.profiler.range(name):
            gp.abs(x)
    trace = prof.chrome_trace()  # json.loads would fail on a bad escape
    assert any(e["name"] == name for e in trace["traceEvents"])


def test_empty_profile_tables():
    prof = gp.profiler.profile()
    assert prof.kernels() == {} and prof.memory_timeline() == []
    assert prof.summary().splitlines()[-1].startswith("0 allocations, 0 records")
    assert all(e["ph"] == "M" for e in prof.chrome_trace()["traceEvents"])
