# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""pygpukit.scheduler: tenants and their validation, task futures (results, errors, states,
history), admission control (memory fit, head of line, QoS order, priorities, deadlines,
dependencies), cancellation, inline task blocks, asyncio, statistics, pacing, listeners,
deterministic replay, tenant removal, shutdown and concurrent submission.

Every blocking wait has a timeout, and the fixtures release every blocker and shut every
scheduler down, so a scheduler bug fails a test instead of hanging the suite."""

import asyncio
import concurrent.futures as cf
import gc
import os
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest
from helpers import check_equal, fmt_bytes, host, rand, round512, settle

import pygpukit as gp

sm = gp.scheduler
TaskRejected = sm.TaskRejected
MiB = 1 << 20
KiB = 1 << 10
WAIT = 30  # seconds: the bound of every blocking wait

STATS_KEYS = set(
    "memory_capacity memory_reserved memory_borrowed pending active running ready "
    "guaranteed_running admitted rejected cancelled completed failed tenants".split()
)
TENANT_KEYS = set(
    "qos memory_request memory_limit memory_admitted memory_used memory_peak pending active "
    "admitted rejected cancelled completed failed inflight inflight_limit max_inflight_seen "
    "launches paced_waits preemptions stream_priority sms queue_us run_us total_us".split()
)
LATENCY_KEYS = {"count", "p50", "p90", "p99", "max", "mean"}
LEGAL = {
    ("pending", "admitted"),
    ("pending", "rejected"),
    ("pending", "cancelled"),
    ("admitted", "running"),
    ("admitted", "cancelled"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
}


class Boom(Exception):
    pass


class Blocker:
    """A task body that signals `started` and returns `value` once `release` is set."""

    def __init__(self, value=None):
        self.started = threading.Event()
        self.release = threading.Event()
        self.value = value

    def __call__(self):
        self.started.set()
        assert self.release.wait(WAIT), "blocker never released"
        return self.value


class Token:
    """An object whose death shows that every reference to it was dropped."""


def quiesce(sched, tenant=None):
    """Drains `sched`, then waits until its notifier thread has run every queued notification
    and dropped the Python objects they held: a sentinel task's result lives only in its done
    callback then, so its death marks the end of the queue. Needed before `shutdown` (see
    test_shutdown_while_notifications_run_does_not_deadlock)."""
    until(lambda: idle(sched))  # drain(), bounded
    if tenant is None:
        tenant = "__quiesce__"
        if tenant not in sched.tenants():
            sched.add_tenant(tenant, "best_effort")
    fut = sched.submit(tenant, Token)
    ref = weakref.ref(fut.result(timeout=WAIT))
    del fut
    until(lambda: ref() is None)


class Harness:
    """Schedulers and blockers of one test; `close` releases the blockers, then shuts the
    schedulers down."""

    def __init__(self):
        self.schedulers = []
        self.blockers = []

    def scheduler(self, **kw):
        kw.setdefault("memory_capacity", 64 * MiB)  # explicit: the same on every device
        s = sm.Scheduler(**kw)
        self.schedulers.append(s)
        return s

    def blocker(self, value=None):
        b = Blocker(value)
        self.blockers.append(b)
        return b

    def close(self):
        for b in self.blockers:
            b.release.set()
        for s in self.schedulers:
            try:
                quiesce(s)
            except RuntimeError:  # already shut down
                pass
            s.shutdown()


@pytest.fixture
def h():
    harness = Harness()
    yield harness
    harness.close()


@pytest.fixture
def sched(h):
    return h.scheduler()


def block(sched, tenant, blocker, **kw):
    """Submits `blocker` and waits until it runs."""
    fut = sched.submit(tenant, blocker, **kw)
    assert blocker.started.wait(WAIT), fut.state
    assert fut.state == "running"
    return fut


def states(fut):
    return [r["to"] for r in fut.history]


def outcome(fut):
    """'completed', 'failed', 'cancelled' or 'rejected', read from the future."""
    try:
        fut.result(timeout=WAIT)
        return "completed"
    except cf.CancelledError:
        return "cancelled"
    except TaskRejected:
        return "rejected"
    except Boom:
        return "failed"


def wait_notified(sched, tenant):
    """Returns once every notification queued so far has run: they run in order, so the done
    callback of a task submitted now runs after all of them."""
    assert sched.submit(tenant, lambda: "sentinel").result(timeout=WAIT) == "sentinel"


def check_dot(x, ref, absprod, k):
    """float64 GPUArray `x` matches `ref`, a length-`k` dot product (times a constant, plus a
    term), within the rounding bound of its summation: `absprod` is the same expression on
    absolute values (|a| @ |b| times the constant)."""
    assert str(x.dtype) == "float64" and x.shape == ref.shape
    u = 2.0**-53
    bound = 2 * (k + 2) * u * absprod + 2 * u * np.abs(ref)
    err = np.abs(host(x) - ref)
    assert np.all(err <= bound), (err.max(), bound.min())


def idle(sched):
    st = sched.stats()
    return st["pending"] == st["active"] == st["running"] == st["ready"] == 0


def until(pred, timeout=WAIT):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.002)


# ---- construction and tenants ----


def test_scheduler_properties_and_default_capacity(h, device):
    s = h.scheduler(memory_capacity=0)
    assert s.device == device
    limit = gp.memory.get_limit(device)
    expected = limit if limit is not None else gp.device_properties(device)["total_memory"]
    assert s.memory_capacity == expected > 0
    s2 = h.scheduler(memory_capacity=12345, workers=1)
    assert s2.memory_capacity == 12345
    assert s2.tenants() == []
    st = s2.stats()
    assert set(st) == STATS_KEYS
    assert st["memory_capacity"] == 12345 and st["tenants"] == {}
    assert all(st[k] == 0 for k in STATS_KEYS - {"memory_capacity", "tenants"})


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(workers=0), r"worker_threads 0 is outside \[1, 256\]"),
        (dict(workers=-3), r"worker_threads -3 is outside"),
        (dict(workers=257), r"worker_threads 257 is outside"),
        (dict(inflight_budget=0), "inflight_budget must be >= 1, got 0"),
        (dict(best_effort_inflight=0), "best_effort_inflight must be >= 1, got 0"),
        (dict(memory_capacity=-1), "memory_capacity must be >= 0, got -1"),
        (
            dict(best_effort_inflight_while_guaranteed=-1),
            "best_effort_inflight_while_guaranteed must be >= 0, got -1",
        ),
        (dict(best_effort_slice_flops=-2), "best_effort_slice_flops must be >= 0, got -2"),
    ],
)
def test_scheduler_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        sm.Scheduler(**kw)


def test_add_tenant_and_qos_aliases(sched):
    assert sched.add_tenant("g", "guaranteed", memory_request=MiB) == "g"
    sched.add_tenant("b", memory_request=MiB, memory_limit=4 * MiB)  # burstable by default
    sched.add_tenant("e1", "best_effort")
    sched.add_tenant("e2", "best-effort")
    sched.add_tenant("e3", "besteffort", memory_limit=2 * MiB)
    assert sorted(sched.tenants()) == ["b", "e1", "e2", "e3", "g"]
    t = sched.stats()["tenants"]
    assert set(t) == {"b", "e1", "e2", "e3", "g"}
    assert all(set(v) == TENANT_KEYS for v in t.values())
    assert [t[n]["qos"] for n in ("g", "b", "e1", "e2", "e3")] == [
        "guaranteed",
        "burstable",
        "best_effort",
        "best_effort",
        "best_effort",
    ]
    assert (t["g"]["memory_request"], t["g"]["memory_limit"]) == (MiB, MiB)  # limit = request
    assert (t["b"]["memory_request"], t["b"]["memory_limit"]) == (MiB, 4 * MiB)
    assert (t["e3"]["memory_request"], t["e3"]["memory_limit"]) == (0, 2 * MiB)
    assert sched.stats()["memory_reserved"] == 2 * MiB  # best-effort reserves nothing
    # CUDA convention: lower is more urgent; guaranteed most, best-effort least.
    assert t["g"]["stream_priority"] <= t["b"]["stream_priority"] <= t["e1"]["stream_priority"]
    assert t["g"]["stream_priority"] < t["e1"]["stream_priority"]
    for v in t.values():
        assert v["memory_used"] == v["memory_admitted"] == v["pending"] == v["active"] == 0
        assert all(v[k]["count"] == 0 for k in ("queue_us", "run_us", "total_us"))


@pytest.mark.parametrize(
    "args, kw, match",
    [
        (("x", "platinum"), {}, "unknown QoS class 'platinum'"),
        (("x", ""), {}, "unknown QoS class"),
        (("x",), dict(compute_share=0.0), r"compute_share 0 is outside \(0, 1\]"),
        (("x",), dict(compute_share=1.5), r"compute_share 1.5 is outside \(0, 1\]"),
        (("x",), dict(compute_share=-0.25), "compute_share"),
        (("x",), dict(compute_share=float("nan")), "compute_share"),
        (("x",), dict(max_inflight=-1), "negative max_inflight"),
        (("x",), dict(streams=0), r"streams 0 is outside \[1, 16\]"),
        (("x",), dict(streams=17), r"streams 17 is outside \[1, 16\]"),
        (("x",), dict(max_running=-1), "negative max_running"),
        (("x",), dict(queue_capacity=0), "queue capacity 0 < 1"),
        (("x",), dict(memory_request=-1), "negative memory request or limit"),
        (("x",), dict(memory_limit=-1), "negative memory request or limit"),
        (("",), {}, "the name is empty"),
        (
            ("x", "guaranteed"),
            dict(memory_request=MiB, memory_limit=2 * MiB),
            r"guaranteed tenant's memory limit \(2.00 MiB\) must equal its request \(1.00 MiB\)",
        ),
        (
            ("x", "burstable"),
            dict(memory_request=2 * MiB, memory_limit=MiB),
            "memory limit 1.00 MiB is below the request 2.00 MiB",
        ),
        (("x", "best_effort"), dict(memory_request=MiB), "best-effort tenant reserves nothing"),
        (("x", "guaranteed"), dict(memory_request=65 * MiB), "over-commits the device"),
    ],
)
def test_add_tenant_bad_arguments(sched, args, kw, match):
    with pytest.raises(ValueError, match=match):
        sched.add_tenant(*args, **kw)
    assert sched.tenants() == []
    assert sched.stats()["memory_reserved"] == 0


def test_over_commit_duplicate_and_remove_readd(sched):
    sched.add_tenant("a", "guaranteed", memory_request=40 * MiB)
    sched.add_tenant("b", "burstable", memory_request=20 * MiB, memory_limit=64 * MiB)
    with pytest.raises(ValueError, match="tenant 'c': request 8.00 MiB over-commits") as e:
        sched.add_tenant("c", "burstable", memory_request=8 * MiB)
    assert "60.00 MiB of 64.00 MiB already reserved" in str(e.value)
    sched.add_tenant("c", "burstable", memory_request=4 * MiB)  # exactly the capacity
    sched.add_tenant("d", "best_effort")  # reserves nothing: always fits
    with pytest.raises(ValueError, match="tenant 'a' already exists"):
        sched.add_tenant("a", "best_effort")
    assert sched.stats()["memory_reserved"] == 64 * MiB
    sched.remove_tenant("a")
    assert sorted(sched.tenants()) == ["b", "c", "d"]
    assert sched.stats()["memory_reserved"] == 24 * MiB
    with pytest.raises(ValueError, match="tenant 'a' does not exist"):
        sched.remove_tenant("a")
    with pytest.raises(ValueError, match="tenant 'a' does not exist"):
        sched.submit("a", lambda: None)
    sched.add_tenant("a", "guaranteed", memory_request=40 * MiB)  # the name is free again
    assert sched.submit("a", lambda: 7).result(timeout=WAIT) == 7


def test_submit_bad_arguments(sched):
    sched.add_tenant("t")
    with pytest.raises(ValueError, match="tenant 'nope' does not exist"):
        sched.submit("nope", lambda: None)
    with pytest.raises(TypeError, match="is not callable"):
        sched.submit("t", 42)
    with pytest.raises(TypeError, match="is not callable"):
        sched.submit("t", None)
    with pytest.raises(TypeError, match="memory must be an int"):
        sched.submit("t", lambda: None, memory=1.5)
    with pytest.raises(TypeError, match="memory must be an int"):
        sched.submit("t", lambda: None, memory=True)
    with pytest.raises(ValueError, match=r"submit: memory -1 is outside \[0, "):
        sched.submit("t", lambda: None, memory=-1)
    with pytest.raises(TypeError, match="submit: tenant must be a str, got int"):
        sched.submit(3, lambda: None)
    with pytest.raises(TypeError, match="submit: timeout must be a number of seconds"):
        sched.submit("t", lambda: None, timeout="x")
    with pytest.raises(ValueError, match="submit: priority 1099511627776 is outside"):
        sched.submit("t", lambda: None, priority=2**40)
    with pytest.raises(ValueError, match="submit: memory 18446744073709551616 is outside"):
        sched.submit("t", lambda: None, memory=2**64)
    with pytest.raises(TypeError, match="add_listener: 5 is not callable"):
        sched.add_listener(5)
    with pytest.raises(TypeError, match="task: deadline must be a number of seconds"):
        sched.task("t", deadline=[1])
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        sched.submit("t", lambda: None, timeout=-1)
    with pytest.raises(ValueError, match="tenant 'nope' does not exist"):
        sched.task("nope").__enter__()
    st = sched.stats()
    assert st["pending"] == st["active"] == st["admitted"] == st["rejected"] == 0


# ---- futures: results, arguments, states ----


def test_submit_returns_future_with_array_result(sched, device, rng):
    sched.add_tenant("t")
    a, b = rand(rng, (37, 23), "float64"), rand(rng, (23, 19), "float64")
    c = rand(rng, (19,), "float64")
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)

    def work(x, y, *, bias):
        return (x @ y) * 2.0 + bias

    fut = sched.submit("t", work, ga, gb, bias=gp.asarray(c, device=device))
    assert isinstance(fut, sm.TaskFuture) and isinstance(fut, cf.Future)
    out = fut.result(timeout=WAIT)
    assert fut.done() and not fut.cancelled() and fut.exception() is None
    check_dot(out, (a @ b) * 2.0 + c, 2.0 * (np.abs(a) @ np.abs(b)) + np.abs(c), 23)
    assert fut.state == "completed" and fut.tenant == "t" and isinstance(fut.id, int)
    assert repr(fut) == f"<TaskFuture id={fut.id} tenant='t' state=completed>"
    assert states(fut) == ["pending", "admitted", "running", "completed"]
    hist = fut.history
    assert hist[0]["from"] == "pending"  # the submission itself
    assert all(r["from"] == p["to"] for p, r in zip(hist, hist[1:]))
    assert all(p["time_ns"] <= r["time_ns"] for p, r in zip(hist, hist[1:]))
    assert all(r["reason"] == "" for r in hist)
    assert not fut.cancel_requested
    assert not fut.cancel()  # finished: nothing to cancel


def test_args_kwargs_and_plain_values_are_forwarded(sched):
    sched.add_tenant("t")
    seen = {}

    def f(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        seen["thread"] = threading.get_ident()
        return {"sum": sum(args)}

    # `memory`, `priority`, `name` ... are the scheduler's; anything else goes to the callable.
    fut = sched.submit("t", f, 1, 2, 3, alpha="a", beta=None, memory=0, priority=1, name="f")
    assert fut.result(timeout=WAIT) == {"sum": 6}
    assert seen["args"] == (1, 2, 3) and seen["kwargs"] == {"alpha": "a", "beta": None}
    assert seen["thread"] != threading.get_ident()  # ran on a worker
    assert sched.submit("t", lambda: None).result(timeout=WAIT) is None


def test_ids_are_unique_and_increasing(sched):
    sched.add_tenant("t")
    futs = [sched.submit("t", int, i) for i in range(20)]
    assert [f.result(timeout=WAIT) for f in futs] == list(range(20))
    ids = [f.id for f in futs]
    assert ids == sorted(ids) and len(set(ids)) == 20


def test_work_queued_before_the_task_is_visible_to_it(sched, device, rng):
    sched.add_tenant("t")
    x = rand(rng, (4096,), "float64")
    gx = gp.asarray(x, device=device)
    for _ in range(5):
        gx = gx * 1.5 + 1.0  # queued on the default stream, not waited for
    fut = sched.submit("t", lambda v: v - 3.0, gx)
    expected = x
    for _ in range(5):
        expected = expected * 1.5 + 1.0
    check_equal(fut.result(timeout=WAIT), expected - 3.0)


def test_task_exception_propagates_and_other_tenants_keep_working(sched, device, rng):
    sched.add_tenant("bad")
    sched.add_tenant("good", "best_effort")
    err = Boom("boom 7")

    def fail():
        raise err

    x = rand(rng, (100,), "int64", small=True)
    gx = gp.asarray(x, device=device)
    fbad = sched.submit("bad", fail)
    fgood = [sched.submit("good", lambda v, k: v * k + 1, gx, k) for k in range(10)]
    with pytest.raises(Boom, match="boom 7") as e:
        fbad.result(timeout=WAIT)
    assert e.value is err  # the original exception object
    assert fbad.exception(timeout=WAIT) is err
    assert fbad.state == "failed"
    assert states(fbad) == ["pending", "admitted", "running", "failed"]
    assert "Boom: boom 7" in fbad.history[-1]["reason"]
    for k, f in enumerate(fgood):
        check_equal(f.result(timeout=WAIT), x * k + 1)
    # A pygpukit error inside a task keeps its type and message as well.
    fshape = sched.submit("bad", lambda: gx.reshape((3, 5)) @ gx)
    with pytest.raises(ValueError, match=r"reshape: cannot reshape array of size 100"):
        fshape.result(timeout=WAIT)
    assert fshape.state == "failed"
    # The failing tenant still runs later tasks.
    check_equal(sched.submit("bad", lambda: gx + gx).result(timeout=WAIT), x + x)
    st = sched.stats()
    assert (st["failed"], st["completed"]) == (2, 11)
    assert st["tenants"]["bad"]["failed"] == 2 and st["tenants"]["bad"]["completed"] == 1
    assert st["tenants"]["good"]["failed"] == 0 and st["tenants"]["good"]["completed"] == 10


@pytest.mark.parametrize("exc", [cf.CancelledError, asyncio.CancelledError])
def test_task_raising_cancelled_error_is_cancelled(sched, exc):
    sched.add_tenant("t")

    def stop():
        raise exc("stop here")

    fut = sched.submit("t", stop)
    with pytest.raises(cf.CancelledError):
        fut.result(timeout=WAIT)
    assert fut.cancelled() and fut.done()
    assert fut.state == "cancelled"
    assert states(fut) == ["pending", "admitted", "running", "cancelled"]
    assert "cancelled itself" in fut.history[-1]["reason"]
    st = sched.stats()
    assert (st["cancelled"], st["failed"], st["completed"]) == (1, 0, 0)


# ---- admission: rejection, fit, order ----


@pytest.mark.parametrize(
    "qos, kw, fits, sizes",
    [
        ("guaranteed", dict(memory_request=MiB), MiB, ["request 1.00 MiB", "limit 1.00 MiB"]),
        (
            "burstable",
            dict(memory_request=MiB, memory_limit=3 * MiB),
            3 * MiB,
            ["request 1.00 MiB", "limit 3.00 MiB"],
        ),
        (
            "burstable",
            dict(memory_request=MiB),
            64 * MiB,
            ["request 1.00 MiB", "limit none", "unreserved capacity 63.00 MiB"],
        ),
        ("best_effort", {}, 64 * MiB, ["request 0 bytes", "unreserved capacity 64.00 MiB"]),
    ],
)
def test_memory_that_can_never_fit_is_rejected(sched, qos, kw, fits, sizes):
    memory = fits + 1
    sched.add_tenant("ten", qos, **kw)
    ran = []
    fut = sched.submit("ten", lambda: ran.append(1), memory=memory)
    assert fut.done()  # rejected during submit
    with pytest.raises(TaskRejected) as e:
        fut.result(timeout=WAIT)
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert f"(tenant 'ten') rejected: memory estimate {fmt_bytes(memory)}" in msg
    assert f"can never fit tenant 'ten' ({qos}" in msg
    for s in sizes:
        assert s in msg
    assert fut.state == "rejected" and states(fut) == ["pending", "rejected"]
    assert not fut.cancelled()
    assert ran == []
    st = sched.stats()
    assert st["rejected"] == 1 and st["tenants"]["ten"]["rejected"] == 1
    assert st["pending"] == st["active"] == st["admitted"] == 0
    # The largest estimate that can fit is admitted.
    assert sched.submit("ten", lambda: "ok", memory=fits).result(timeout=WAIT) == "ok"


def test_memory_fit_and_head_of_line(sched, h):
    sched.add_tenant("g", "guaranteed", memory_request=MiB)
    sched.add_tenant("other", "best_effort")
    b = h.blocker("first")
    f1 = block(sched, "g", b, memory=768 * KiB)
    order = []
    f2 = sched.submit("g", order.append, "big", memory=512 * KiB)  # does not fit yet
    f3 = sched.submit("g", order.append, "small", memory=128 * KiB)  # fits, but queued behind
    assert (f2.state, f3.state) == ("pending", "pending")
    # Other tenants go on.
    assert sched.submit("other", lambda: "free", memory=MiB).result(timeout=WAIT) == "free"
    st = sched.stats()
    assert st["tenants"]["g"]["memory_admitted"] == 768 * KiB
    assert (st["tenants"]["g"]["pending"], st["tenants"]["g"]["active"]) == (2, 1)
    assert (st["pending"], st["active"], st["running"]) == (2, 1, 1)
    b.release.set()
    assert f1.result(timeout=WAIT) == "first"
    f2.result(timeout=WAIT)
    f3.result(timeout=WAIT)
    assert sorted(order) == ["big", "small"]
    # Both were admitted once f1 had ended, the head of the line first.
    admitted = [r["task"] for r in sched.history() if r["to"] == "admitted"]
    assert admitted.index(f1.id) < admitted.index(f2.id) < admitted.index(f3.id)
    done1 = f1.history[-1]["time_ns"]
    assert f2.history[1]["to"] == "admitted" and f2.history[1]["time_ns"] >= done1


def test_burstable_borrows_unreserved_capacity(h):
    s = h.scheduler(memory_capacity=4 * MiB)
    s.add_tenant("g", "guaranteed", memory_request=2 * MiB)
    s.add_tenant("u", "burstable", memory_request=MiB, memory_limit=3 * MiB)
    b = h.blocker()
    f1 = block(s, "u", b, memory=MiB + 512 * KiB)  # 512 KiB beyond its request
    st = s.stats()
    assert st["memory_borrowed"] == 512 * KiB and st["memory_reserved"] == 3 * MiB
    f2 = s.submit("u", lambda: "late", memory=MiB)  # would borrow 1 MiB, only 512 KiB free
    assert f2.state == "pending"
    # The guaranteed tenant's reservation is untouched by the borrowing.
    assert s.submit("g", lambda: "g", memory=2 * MiB).result(timeout=WAIT) == "g"
    b.release.set()
    f1.result(timeout=WAIT)
    assert f2.result(timeout=WAIT) == "late"
    s.drain()
    assert s.stats()["memory_borrowed"] == 0


def test_qos_class_order_over_submission_order(h):
    s = h.scheduler(memory_capacity=4 * MiB)
    s.add_tenant("u", "burstable", memory_limit=3 * MiB)
    s.add_tenant("e", "best_effort")
    b = h.blocker()
    f0 = block(s, "e", b, memory=3 * MiB)  # holds all of the capacity but 1 MiB
    order = []
    fe = s.submit("e", order.append, "best_effort", memory=3 * MiB)  # submitted first
    fu = s.submit("u", order.append, "burstable", memory=3 * MiB)
    assert (fe.state, fu.state) == ("pending", "pending")
    b.release.set()
    for f in (f0, fe, fu):
        f.result(timeout=WAIT)
    assert order == ["burstable", "best_effort"]


def test_priorities_then_deadlines_then_submission_order(sched, h):
    sched.add_tenant("t", max_running=1)
    b = h.blocker()
    f0 = block(sched, "t", b)
    order = []
    specs = [  # (label, priority, timeout)
        ("p0", 0, None),
        ("p5a", 5, None),
        ("m3", -3, None),
        ("p10", 10, None),
        ("p5b", 5, None),
        ("p2-none", 2, None),
        ("p2-60s", 2, 60.0),
        ("p2-30s", 2, 30.0),
        ("p1", 1, None),
    ]
    futs = [
        sched.submit("t", order.append, label, priority=p, timeout=tmo) for label, p, tmo in specs
    ]
    assert all(f.state == "pending" for f in futs)
    assert sched.stats()["tenants"]["t"]["pending"] == len(specs)
    b.release.set()
    f0.result(timeout=WAIT)
    for f in futs:
        f.result(timeout=WAIT)
    assert order == ["p10", "p5a", "p5b", "p2-30s", "p2-60s", "p2-none", "p1", "p0", "m3"]


def test_max_running_bounds_concurrency(h):
    s = h.scheduler(workers=6)
    s.add_tenant("t", max_running=2)
    lock = threading.Lock()
    now = [0, 0]  # running, most seen

    def work(i):
        with lock:
            now[0] += 1
            now[1] = max(now[1], now[0])
        time.sleep(0.005)
        with lock:
            now[0] -= 1
        return i

    futs = [s.submit("t", work, i) for i in range(12)]
    assert [f.result(timeout=WAIT) for f in futs] == list(range(12))
    assert 1 <= now[1] <= 2


def test_queue_capacity_rejects_overflow(sched, h):
    sched.add_tenant("t", max_running=1, queue_capacity=2)
    b = h.blocker()
    block(sched, "t", b)  # running: not in the queue
    p1, p2 = sched.submit("t", lambda: 1), sched.submit("t", lambda: 2)
    over = sched.submit("t", lambda: 3)
    with pytest.raises(TaskRejected, match=r"tenant 't': queue full \(2 pending tasks\)"):
        over.result(timeout=WAIT)
    b.release.set()
    assert (p1.result(timeout=WAIT), p2.result(timeout=WAIT)) == (1, 2)


def test_timeout_expires_while_pending(sched, h):
    sched.add_tenant("t", max_running=1)
    b = h.blocker("done")
    f0 = block(sched, "t", b)
    ran = []
    t0 = time.monotonic()
    late = sched.submit("t", lambda: ran.append(1), timeout=0.05)
    assert late.state == "pending"
    with pytest.raises(TaskRejected, match="deadline passed while pending") as e:
        late.result(timeout=WAIT)
    assert time.monotonic() - t0 >= 0.04
    assert f"task {late.id} (tenant 't') rejected" in str(e.value)
    assert late.state == "rejected" and states(late) == ["pending", "rejected"]
    assert f0.state == "running"  # expired while the blocker still held the tenant
    # An absolute deadline (time.monotonic() seconds) expires the same way.
    late2 = sched.submit("t", lambda: ran.append(2), deadline=time.monotonic() + 0.05)
    with pytest.raises(TaskRejected, match="deadline passed while pending"):
        late2.result(timeout=WAIT)
    b.release.set()
    assert f0.result(timeout=WAIT) == "done"
    assert ran == []
    # A timeout that is not reached changes nothing.
    assert sched.submit("t", lambda: "in time", timeout=WAIT).result(timeout=WAIT) == "in time"
    assert sched.stats()["rejected"] == 2


def test_timeout_expires_while_every_worker_is_busy(h):
    s = h.scheduler(workers=1)
    s.add_tenant("t", max_running=1)
    b = h.blocker()
    block(s, "t", b)
    late = s.submit("t", lambda: None, timeout=0.05)
    time.sleep(0.5)
    try:
        assert late.done() and late.state == "rejected"
    finally:
        b.release.set()


def test_past_deadline_is_rejected_at_submission(sched):
    sched.add_tenant("t")
    ran = []
    fut = sched.submit("t", lambda: ran.append(1), deadline=time.monotonic() - 1.0)
    assert outcome(fut) == "rejected" and ran == []


def test_zero_timeout_when_the_task_must_wait(sched, h):
    sched.add_tenant("t", max_running=1)
    b = h.blocker()
    block(sched, "t", b)
    fut = sched.submit("t", lambda: None, timeout=0)
    with pytest.raises(TaskRejected, match="deadline"):
        fut.result(timeout=WAIT)


# ---- cancellation ----


def test_cancel_pending_task(sched, h):
    sched.add_tenant("t", max_running=1)
    b = h.blocker("b")
    f0 = block(sched, "t", b)
    ran = []
    fut = sched.submit("t", lambda: ran.append(1))
    after = sched.submit("t", lambda: "after")
    assert fut.state == "pending"
    assert fut.cancel() is True
    assert fut.cancelled() and fut.done()
    with pytest.raises(cf.CancelledError):
        fut.result(timeout=WAIT)
    assert fut.state == "cancelled" and states(fut) == ["pending", "cancelled"]
    assert fut.history[-1]["reason"] == "cancelled while pending"
    assert fut.cancel() is True  # already cancelled: stays so
    assert sched.cancel(fut) is True
    b.release.set()
    assert f0.result(timeout=WAIT) == "b"
    assert after.result(timeout=WAIT) == "after"
    assert ran == []
    st = sched.stats()
    assert (st["cancelled"], st["completed"]) == (1, 2)


def test_cancel_admitted_task_waiting_for_a_worker(h):
    s = h.scheduler(workers=1)
    s.add_tenant("a")
    s.add_tenant("b")
    b = h.blocker()
    f0 = block(s, "a", b)  # the only worker is busy
    ran = []
    fut = s.submit("b", lambda: ran.append(1))
    assert fut.state == "admitted"
    assert s.stats()["ready"] == 1
    assert fut.cancel() is True
    with pytest.raises(cf.CancelledError):
        fut.result(timeout=WAIT)
    assert states(fut) == ["pending", "admitted", "cancelled"]
    assert s.stats()["ready"] == 0
    b.release.set()
    f0.result(timeout=WAIT)
    assert s.submit("b", lambda: "next").result(timeout=WAIT) == "next"
    assert ran == []


def test_cancel_running_task_requests_cooperative_stop(sched):
    sched.add_tenant("t")
    started = threading.Event()
    box = {}

    def cooperative():
        started.set()
        end = time.monotonic() + WAIT
        while not box["fut"].cancel_requested:
            assert time.monotonic() < end
            time.sleep(0.001)
        raise cf.CancelledError("asked to stop")

    box["fut"] = fut = sched.submit("t", cooperative)
    assert started.wait(WAIT)
    assert fut.state == "running" and not fut.cancel_requested
    assert fut.cancel() is False  # running: only a request
    assert fut.cancel_requested
    with pytest.raises(cf.CancelledError):
        fut.result(timeout=WAIT)
    assert fut.state == "cancelled"
    assert states(fut) == ["pending", "admitted", "running", "cancelled"]


def test_cancel_running_task_that_ignores_the_request_completes(sched, h):
    sched.add_tenant("t")
    b = h.blocker(5)
    fut = block(sched, "t", b)
    assert fut.cancel() is False and fut.cancel_requested
    b.release.set()
    assert fut.result(timeout=WAIT) == 5 and fut.state == "completed"


def test_future_running_follows_the_task(sched, h):
    sched.add_tenant("t")
    b = h.blocker()
    fut = block(sched, "t", b)
    try:
        assert fut.running()
    finally:
        b.release.set()


# ---- dependencies ----


def test_depends_on_orders_execution_and_passes_results(sched, h, device, rng):
    sched.add_tenant("t")
    sched.add_tenant("u", "best_effort")
    x = rand(rng, (64, 32), "float64")
    w = rand(rng, (32, 16), "float64")
    gx, gw = gp.asarray(x, device=device), gp.asarray(w, device=device)
    b = h.blocker()
    order = []

    def first():
        b()
        order.append("a")
        return gx @ gw

    fa = sched.submit("t", first)
    assert b.started.wait(WAIT)

    def second():
        order.append("b")
        return fa.result(timeout=WAIT) + 1.0

    fb = sched.submit("u", second, depends_on=[fa])  # another tenant
    fc = sched.submit(
        "t", lambda: order.append("c") or fb.result(timeout=WAIT) * 2.0, depends_on=[fa.id, fb]
    )
    assert (fb.state, fc.state) == ("pending", "pending")
    assert sched.stats()["pending"] == 2
    b.release.set()
    absprod = np.abs(x) @ np.abs(w) + 1.0
    check_dot(fc.result(timeout=WAIT), (x @ w + 1.0) * 2.0, 2.0 * absprod, 32)
    check_dot(fb.result(timeout=WAIT), x @ w + 1.0, absprod, 32)
    assert order == ["a", "b", "c"]

    def t_of(f, state):
        return next(r["time_ns"] for r in f.history if r["to"] == state)

    assert t_of(fb, "running") >= t_of(fa, "completed")
    assert t_of(fc, "running") >= t_of(fb, "completed")
    # A dependency that is already complete is satisfied at once.
    assert sched.submit("t", lambda: "later", depends_on=[fa]).result(timeout=WAIT) == "later"


def test_failed_dependency_cancels_dependents(sched, h):
    sched.add_tenant("t")
    b = h.blocker()

    def fail():
        b()
        raise Boom("dep failed")

    fa = sched.submit("t", fail)
    ran = []
    fb = sched.submit("t", lambda: ran.append("b"), depends_on=[fa])
    fc = sched.submit("t", lambda: ran.append("c"), depends_on=[fb])  # transitively
    b.release.set()
    with pytest.raises(Boom):
        fa.result(timeout=WAIT)
    for f in (fb, fc):
        with pytest.raises(cf.CancelledError):
            f.result(timeout=WAIT)
        assert f.state == "cancelled" and states(f) == ["pending", "cancelled"]
    assert fb.history[-1]["reason"] == f"dependency {fa.id} failed"
    assert fc.history[-1]["reason"] == f"dependency {fb.id} cancelled"
    # Submitted after the failure: cancelled at once.
    fd = sched.submit("t", lambda: ran.append("d"), depends_on=[fa])
    assert outcome(fd) == "cancelled"
    assert ran == []
    assert sched.stats()["cancelled"] == 3


def test_rejected_or_cancelled_or_unknown_dependency(sched, h):
    sched.add_tenant("g", "guaranteed", memory_request=MiB)
    sched.add_tenant("t", max_running=1)
    rej = sched.submit("g", lambda: None, memory=2 * MiB)
    assert outcome(rej) == "rejected"
    f1 = sched.submit("t", lambda: None, depends_on=[rej])
    assert outcome(f1) == "cancelled"
    assert f1.history[-1]["reason"] == f"dependency {rej.id} rejected"
    b = h.blocker()
    block(sched, "t", b)
    pend = sched.submit("t", lambda: None)
    dep = sched.submit("g", lambda: None, depends_on=[pend])
    assert dep.state == "pending"
    assert pend.cancel()
    assert outcome(dep) == "cancelled"
    assert dep.history[-1]["reason"] == f"dependency {pend.id} cancelled"
    unknown = sched.submit("g", lambda: None, depends_on=[10**9])
    with pytest.raises(TaskRejected, match=f"unknown dependency {10**9}"):
        unknown.result(timeout=WAIT)


# ---- inline task blocks ----


def test_task_block_results_visible_after_the_block(sched, device, rng):
    sched.add_tenant("t", "guaranteed", memory_request=4 * MiB)
    a, w = rand(rng, (50, 40), "float64"), rand(rng, (40, 30), "float64")
    ga, gw = gp.asarray(a, device=device), gp.asarray(w, device=device)
    with sched.task("t", memory=MiB, name="blk") as t:
        assert t.state == "running" and isinstance(t.id, int)
        y = ga @ gw
        z = y * 3.0 + 1.0
        used = sched.stats()["tenants"]["t"]["memory_used"]
        assert used >= 2 * round512(50 * 30 * 8)  # y and z are charged to the tenant
        assert sched.stats()["running"] == 1
    absprod = np.abs(a) @ np.abs(w)
    check_dot(z, (a @ w) * 3.0 + 1.0, 3.0 * absprod + 1.0, 40)  # right away
    assert t.wait(timeout=WAIT) is True
    assert t.state == "completed"
    assert [r["to"] for r in t.task.history] == ["pending", "admitted", "running", "completed"]
    check_dot(y, a @ w, absprod, 40)
    after = sched.submit("t", lambda: z - 1.0, depends_on=[t])  # a block is a dependency too
    check_dot(after.result(timeout=WAIT), (a @ w) * 3.0, 3.0 * absprod + 2.0, 40)
    st = sched.stats()
    assert st["completed"] == 2 and st["tenants"]["t"]["total_us"]["count"] == 2


def test_task_block_exception_fails_the_task(sched, device, rng):
    sched.add_tenant("t")
    x = rand(rng, (10,), "float64")
    with pytest.raises(ZeroDivisionError), sched.task("t") as t:
        y = gp.asarray(x, device=device) * 2.0
        raise ZeroDivisionError("in block")
    assert t.wait(timeout=WAIT)
    assert t.state == "failed"
    assert "ZeroDivisionError: in block" in t.task.error
    check_equal(y, x * 2.0)  # work done before the exception still stands
    assert sched.stats()["failed"] == 1
    with sched.task("t") as t2:  # the tenant goes on
        pass
    assert t2.wait(timeout=WAIT) and t2.state == "completed"


def test_task_block_waits_for_admission_and_dependencies(sched, h):
    sched.add_tenant("t", max_running=1)
    b = h.blocker("first")
    f0 = block(sched, "t", b)
    entered = threading.Event()
    res = {}

    def run_block():
        with sched.task("t", depends_on=[f0]) as t:
            entered.set()
            res["f0_state"] = f0.state
        res["t"] = t

    th = threading.Thread(target=run_block)
    th.start()
    assert not entered.wait(0.1)  # pending behind the running task
    b.release.set()
    th.join(WAIT)
    assert not th.is_alive()
    assert res["f0_state"] == "completed"
    assert res["t"].wait(WAIT) and res["t"].state == "completed"


def test_a_new_reservation_rejects_queued_tasks_that_can_no_longer_fit(h):
    s = h.scheduler(memory_capacity=8 * MiB)
    s.add_tenant("u", "burstable", memory_request=MiB, max_running=1)
    b = h.blocker()
    first = block(s, "u", b, memory=MiB)
    big = s.submit("u", lambda: "big", memory=6 * MiB)  # fits 1 + 7 MiB unreserved, queued
    small = s.submit("u", lambda: "small", memory=2 * MiB)
    assert big.state == "pending" and small.state == "pending"
    # 4 MiB reserved by a new tenant: u can reach 1 + 3 MiB at most. Without the rejection,
    # `big` would wait forever (it has no deadline).
    s.add_tenant("g", "guaranteed", memory_request=4 * MiB)
    with pytest.raises(TaskRejected, match="can no longer fit tenant 'u'.*after tenant 'g'"):
        big.result(timeout=WAIT)
    b.release.set()
    assert first.result(timeout=WAIT) is None
    assert small.result(timeout=WAIT) == "small"


def test_task_block_rejected_or_expired(sched, h):
    sched.add_tenant("g", "guaranteed", memory_request=MiB, max_running=1)
    with pytest.raises(RuntimeError, match="can never fit tenant 'g'"):
        with sched.task("g", memory=2 * MiB):
            pytest.fail("the block must not run")
    b = h.blocker()
    block(sched, "g", b)
    with pytest.raises(RuntimeError, match="deadline passed while pending"):
        with sched.task("g", timeout=0.05):
            pytest.fail("the block must not run")
    st = sched.stats()
    assert st["rejected"] == 2 and st["tenants"]["g"]["pending"] == 0


# ---- asyncio ----


def test_asyncio_await_and_gather(sched, device, rng):
    sched.add_tenant("t")
    sched.add_tenant("e", "best_effort")
    x = rand(rng, (300,), "float64")
    gx = gp.asarray(x, device=device)

    async def main():
        one = await sched.submit("t", lambda v: v * 4.0, gx)
        many = await asyncio.gather(
            *(sched.submit("e" if k % 2 else "t", lambda v, k=k: v + k, gx) for k in range(8))
        )
        with pytest.raises(Boom, match="async boom"):
            await sched.submit("t", lambda: (_ for _ in ()).throw(Boom("async boom")))
        with pytest.raises(TaskRejected):
            await sched.submit("e", lambda: None, memory=1 << 62)
        with pytest.raises(asyncio.CancelledError):
            await sched.submit("t", lambda: (_ for _ in ()).throw(cf.CancelledError()))
        plain = await sched.submit("t", lambda: "plain")
        return one, many, plain

    one, many, plain = asyncio.run(asyncio.wait_for(main(), WAIT))
    check_equal(one, x * 4.0)
    assert len(many) == 8
    for k, m in enumerate(many):
        check_equal(m, x + k)
    assert plain == "plain"


# ---- statistics ----


def test_stats_counts_queues_and_memory(h, device, rng):
    s = h.scheduler()
    s.add_tenant("g", "guaranteed", memory_request=8 * MiB)
    s.add_tenant("q", max_running=1)
    b = h.blocker()
    x = rand(rng, (1000,), "float64")  # 8000 bytes

    def keep():
        return gp.asarray(x, device=device) + 1.0  # the result is held by the future

    fk = s.submit("g", keep, memory=MiB)
    out = fk.result(timeout=WAIT)
    check_equal(out, x + 1.0)
    block(s, "q", b)
    pend = [s.submit("q", lambda: None) for _ in range(3)]
    fail = s.submit("g", lambda: (_ for _ in ()).throw(Boom("x")))
    rej = s.submit("g", lambda: None, memory=9 * MiB)
    assert outcome(fail) == "failed" and outcome(rej) == "rejected"
    settle(device)  # frees the tasks' temporaries
    st = s.stats()
    assert (st["pending"], st["active"], st["running"]) == (3, 1, 1)
    assert st["tenants"]["q"]["pending"] == 3 and st["tenants"]["q"]["active"] == 1
    assert st["tenants"]["g"]["pending"] == 0 and st["tenants"]["g"]["active"] == 0
    assert st["guaranteed_running"] == 0
    g = st["tenants"]["g"]
    # The live result (and nothing else: its input temporary is freed) is charged to 'g'.
    assert g["memory_used"] == round512(8000)
    assert g["memory_peak"] >= g["memory_used"]
    assert st["tenants"]["q"]["memory_used"] == 0
    assert g["memory_admitted"] == 0  # estimates are returned at the end
    assert pend[0].cancel()
    b.release.set()
    for f in pend[1:]:
        f.result(timeout=WAIT)
    s.drain()
    st = s.stats()
    assert (st["admitted"], st["completed"], st["failed"]) == (5, 4, 1)
    assert (st["rejected"], st["cancelled"]) == (1, 1)
    assert (st["tenants"]["g"]["admitted"], st["tenants"]["g"]["completed"]) == (2, 1)
    assert (st["tenants"]["g"]["failed"], st["tenants"]["g"]["rejected"]) == (1, 1)
    assert (st["tenants"]["q"]["admitted"], st["tenants"]["q"]["completed"]) == (3, 3)
    assert st["tenants"]["q"]["cancelled"] == 1
    assert (st["pending"], st["active"], st["running"], st["ready"]) == (0, 0, 0, 0)
    del out, fk
    settle(device)
    assert s.stats()["tenants"]["g"]["memory_used"] == 0


def test_stats_latency_percentiles(sched):
    sched.add_tenant("lat")
    n = 25
    futs = [sched.submit("lat", time.sleep, 0.001 * (i % 3)) for i in range(n)]
    for f in futs:
        f.result(timeout=WAIT)
    sched.drain()
    t = sched.stats()["tenants"]["lat"]
    assert t["completed"] == n
    for key in ("queue_us", "run_us", "total_us"):
        lat = t[key]
        assert set(lat) == LATENCY_KEYS
        assert lat["count"] == n
        assert 0 <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
        assert lat["p50"] <= lat["max"] and 0 <= lat["mean"] <= lat["max"]
    assert t["run_us"]["max"] >= 1000  # some tasks slept 2 ms
    assert t["total_us"]["max"] >= t["run_us"]["max"] * 0.999
    assert t["total_us"]["mean"] >= t["run_us"]["mean"] * 0.999


def test_memory_quota_of_a_tenant_limits_its_tasks(sched, device):
    sched.add_tenant("g", "guaranteed", memory_request=64 * KiB)
    sched.add_tenant("u", "burstable", memory_limit=128 * KiB)

    def alloc(n):
        return gp.empty((n,), dtype=gp.uint8, device=device)

    assert sched.submit("g", alloc, 32 * KiB).result(timeout=WAIT).shape == (32 * KiB,)
    for tenant, n in (("g", 100 * KiB), ("u", 200 * KiB)):
        fut = sched.submit(tenant, alloc, n)
        with pytest.raises(MemoryError, match=f"quota '{tenant}'"):
            fut.result(timeout=WAIT)
        assert fut.state == "failed"
    settle(device)
    assert sched.stats()["tenants"]["g"]["memory_used"] == 0


# ---- pacing ----


def test_pacing_limits_kernels_in_flight(h, device, rng):
    s = h.scheduler(inflight_budget=32, best_effort_inflight=6)
    s.add_tenant("be", "best_effort", max_inflight=1)
    s.add_tenant("be-default", "best_effort")
    s.add_tenant("be-half", "best_effort", compute_share=0.5)
    s.add_tenant("g", "guaranteed", memory_request=MiB)
    s.add_tenant("share", "burstable", compute_share=0.25)
    s.add_tenant("tiny", "burstable", compute_share=0.01)
    x = rand(rng, (2048,), "float64")
    gx = gp.asarray(x, device=device)
    n_ops = 40

    def chain(v):
        for _ in range(n_ops):
            v = v + 1.0
        return v

    expected = chain(x)  # the same additions in NumPy
    check_equal(s.submit("be", chain, gx).result(timeout=WAIT), expected)
    check_equal(s.submit("g", chain, gx).result(timeout=WAIT), expected)
    with s.task("be"):
        y = chain(gx)
    check_equal(y, expected)
    # A kernel leaves the count when the watcher sees it done, maybe just after its task ended.
    until(lambda: s.stats()["tenants"]["be"]["inflight"] == 0)
    t = s.stats()["tenants"]
    assert t["be"]["inflight_limit"] == 1
    assert 1 <= t["be"]["max_inflight_seen"] <= 1
    assert t["be"]["launches"] >= 2 * n_ops
    assert t["g"]["inflight_limit"] == 0  # guaranteed: never paced
    assert t["g"]["launches"] >= n_ops and t["g"]["max_inflight_seen"] == 0
    assert t["g"]["paced_waits"] == 0
    assert t["share"]["inflight_limit"] == 8
    assert t["tiny"]["inflight_limit"] == 1
    assert t["be-default"]["inflight_limit"] == 6  # best_effort_inflight, not inflight_budget
    assert t["be-half"]["inflight_limit"] == 3
    d = h.scheduler()  # defaults: best-effort 2 (one running, one queued), burstable 32
    d.add_tenant("be", "best_effort")
    d.add_tenant("bu", "burstable")
    assert [d.stats()["tenants"][n]["inflight_limit"] for n in ("be", "bu")] == [2, 32]


def test_best_effort_is_throttled_while_guaranteed_runs(h, device, rng):
    s = h.scheduler(best_effort_inflight_while_guaranteed=1)
    s.add_tenant("g", "guaranteed", memory_request=MiB)
    # Unpartitioned: a partitioned tenant keeps its own limit (test_sm_partitions.py).
    s.add_tenant("be", "best_effort", max_inflight=8, sms=0)
    b = h.blocker()
    fg = block(s, "g", b)
    assert s.stats()["guaranteed_running"] == 1
    x = rand(rng, (4096,), "float64")
    gx = gp.asarray(x, device=device)

    def chain(v):
        for _ in range(30):
            v = v * 1.0 + 1.0
        return v

    check_equal(s.submit("be", chain, gx).result(timeout=WAIT), chain(x))
    assert s.stats()["tenants"]["be"]["max_inflight_seen"] <= 1
    b.release.set()
    fg.result(timeout=WAIT)
    s.drain()
    assert s.stats()["guaranteed_running"] == 0


def test_best_effort_waits_while_guaranteed_runs_when_budget_is_zero(h, device, rng):
    s = h.scheduler(best_effort_inflight_while_guaranteed=0)
    s.add_tenant("g", "guaranteed", memory_request=MiB)
    s.add_tenant("be", "best_effort")
    x = rand(rng, (256,), "float64")
    gx = gp.asarray(x, device=device)
    b = h.blocker()
    fg = block(s, "g", b)
    fbe = s.submit("be", lambda v: v + 2.0, gx)
    with pytest.raises(cf.TimeoutError):
        fbe.result(timeout=0.2)  # held at its first launch
    assert fbe.state == "running"
    assert s.stats()["tenants"]["be"]["paced_waits"] >= 1
    b.release.set()
    fg.result(timeout=WAIT)
    check_equal(fbe.result(timeout=WAIT), x + 2.0)


# ---- listeners, history, replay ----


def test_listeners_receive_every_transition_in_order(sched, h):
    sched.add_tenant("t", max_running=1)
    sched.add_tenant("g", "guaranteed", memory_request=MiB)
    records, other = [], []
    sched.add_listener(records.append)
    sched.add_listener(other.append)
    futs = [sched.submit("g", lambda i=i: i) for i in range(3)]
    futs.append(sched.submit("g", lambda: (_ for _ in ()).throw(Boom("no"))))
    futs.append(sched.submit("g", lambda: None, memory=2 * MiB))  # rejected
    b = h.blocker()
    futs.append(block(sched, "t", b))
    pend = sched.submit("t", lambda: None)
    futs.append(pend)
    assert pend.cancel()
    b.release.set()
    outcomes = [outcome(f) for f in futs]
    assert outcomes == ["completed"] * 3 + ["failed", "rejected", "completed", "cancelled"]
    wait_notified(sched, "g")
    assert records == other
    assert all(set(r) == {"task", "tenant", "from", "to", "time_ns", "reason"} for r in records)
    assert all((r["from"], r["to"]) in LEGAL for r in records)
    assert all(p["time_ns"] <= r["time_ns"] for p, r in zip(records, records[1:]))
    for f in futs:
        mine = [(r["from"], r["to"], r["reason"]) for r in records if r["task"] == f.id]
        own = [(r["from"], r["to"], r["reason"]) for r in f.history[1:]]  # less the submission
        assert mine == own, f
        assert all(r["tenant"] == f.tenant for r in records if r["task"] == f.id)
    # The scheduler's history holds the same transitions, plus the submissions.
    hist = sched.history()
    assert hist == sorted(hist, key=lambda r: r["time_ns"])
    assert [r for r in hist if not (r["from"] == r["to"] == "pending")] == records
    assert sum(r["from"] == r["to"] == "pending" for r in hist) == len(futs) + 1  # + sentinel


def test_listener_errors_are_reported_and_do_not_stop_scheduling(sched, monkeypatch):
    sched.add_tenant("t")
    seen, unraisable = [], []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    armed = [True]

    def bad(rec):
        if armed[0]:
            raise Boom("listener")

    sched.add_listener(bad)
    sched.add_listener(seen.append)
    assert sched.submit("t", lambda: 3).result(timeout=WAIT) == 3
    wait_notified(sched, "t")
    assert [r["to"] for r in seen[:3]] == ["admitted", "running", "completed"]
    armed[0] = False  # the teardown's tasks notify it too
    assert len(unraisable) >= 3 and all(isinstance(u.exc_value, Boom) for u in unraisable)
    assert all(str(u.object) == "pygpukit scheduler listener" for u in unraisable)


def test_history_is_bounded(h):
    s = h.scheduler(history_capacity=10)
    s.add_tenant("t", max_running=1)  # one at a time: the last task ends last
    futs = [s.submit("t", lambda: None) for _ in range(20)]
    for f in futs:
        f.result(timeout=WAIT)
    s.drain()
    hist = s.history()
    assert len(hist) == 10
    assert [(r["task"], r["to"]) for r in hist[-3:]] == [
        (futs[-1].id, "admitted"),
        (futs[-1].id, "running"),
        (futs[-1].id, "completed"),
    ]
    assert all(p["time_ns"] <= r["time_ns"] for p, r in zip(hist, hist[1:]))
    assert len(futs[0].history) == 4  # a task's own history is not bounded by it


def test_decisions_replay_after_mixed_workload(h):
    s = h.scheduler(record_admission=True, memory_capacity=8 * MiB)
    s.add_tenant("g", "guaranteed", memory_request=2 * MiB)
    s.add_tenant("u", "burstable", memory_request=MiB, memory_limit=4 * MiB, max_running=1)
    s.add_tenant("e", "best_effort", queue_capacity=3)
    b = h.blocker()
    futs = [block(s, "u", b, memory=2 * MiB)]
    futs += [s.submit("u", lambda: None, memory=MiB, priority=p) for p in (0, 3, 1)]
    futs.append(s.submit("u", lambda: None, timeout=0.02))  # expires
    futs += [s.submit("g", lambda: None, memory=MiB) for _ in range(3)]
    futs.append(s.submit("g", lambda: None, memory=3 * MiB))  # rejected
    futs.append(s.submit("g", lambda: (_ for _ in ()).throw(Boom("f"))))
    futs.append(s.submit("e", lambda: None, depends_on=[futs[-1]]))  # cancelled: dep fails
    futs.append(s.submit("e", lambda: None, memory=5 * MiB))  # never fits (4 MiB unreserved)
    futs += [s.submit("e", lambda: None, memory=3 * MiB, priority=i) for i in range(4)]
    futs[2].cancel()
    time.sleep(0.05)  # let the timeout expire
    b.release.set()
    outcomes = [outcome(f) for f in futs]
    s.drain()
    assert set(outcomes) == {"completed", "failed", "rejected", "cancelled"}
    d = s.decisions()
    assert d == s.replay_decisions()
    assert all(isinstance(x, tuple) and len(x) == 3 for x in d)
    decided = {task: state for task, state, _ in d}
    for f, o in zip(futs, outcomes):
        if o in ("rejected",):
            assert decided[f.id] == "rejected"
        elif "admitted" in states(f):
            assert "admitted" in [st for task, st, _ in d if task == f.id], f
    assert {st for _, st, _ in d} == {"admitted", "rejected", "cancelled"}
    assert all((reason == "") == (st == "admitted") for _, st, reason in d)


def test_decisions_are_empty_without_recording(sched):
    sched.add_tenant("t")
    sched.submit("t", lambda: None).result(timeout=WAIT)
    assert sched.decisions() == [] and sched.replay_decisions() == []


# ---- tenant removal, shutdown, default ----


def test_remove_tenant_cancels_waiting_tasks(sched, h):
    sched.add_tenant("t", max_running=1)
    sched.add_tenant("keep")
    b = h.blocker("ran")
    running = block(sched, "t", b)
    waiting = [sched.submit("t", lambda: None) for _ in range(3)]
    th = threading.Thread(target=sched.remove_tenant, args=("t",))
    th.start()
    for f in waiting:
        assert outcome(f) == "cancelled"
        assert f.state == "cancelled"
    assert running.cancel_requested  # asked to stop, waited for
    assert th.is_alive()
    assert sched.tenants() == ["keep"]  # no longer listed while being removed
    with pytest.raises(ValueError, match="tenant 't' does not exist"):
        sched.submit("t", lambda: None)
    assert sched.submit("keep", lambda: "k").result(timeout=WAIT) == "k"
    b.release.set()
    th.join(WAIT)
    assert not th.is_alive()
    assert running.result(timeout=WAIT) == "ran"
    assert "t" not in sched.stats()["tenants"]


def test_shutdown_is_idempotent_and_refuses_new_work(h):
    s = h.scheduler()
    s.add_tenant("t")
    futs = [s.submit("t", lambda i=i: i) for i in range(10)]
    assert [f.result(timeout=WAIT) for f in futs] == list(range(10))
    quiesce(s, "t")
    s.shutdown()
    s.shutdown()
    with pytest.raises(RuntimeError, match="submit: the scheduler is shut down"):
        s.submit("t", lambda: None)
    with pytest.raises(RuntimeError, match="tenant 'new': the scheduler is shut down"):
        s.add_tenant("new")
    with pytest.raises(RuntimeError, match="shut down"):
        s.task("t").__enter__()
    st = s.stats()
    assert (st["pending"], st["active"], st["running"], st["completed"]) == (0, 0, 0, 11)
    s.drain()  # nothing to wait for


def test_context_manager_shuts_down():
    with sm.Scheduler(workers=1, memory_capacity=MiB) as s:
        assert s.__enter__() is s
        s.add_tenant("t")
        assert s.submit("t", lambda: 1).result(timeout=WAIT) == 1
        quiesce(s, "t")
    with pytest.raises(RuntimeError, match="shut down"):
        s.submit("t", lambda: None)


# Shutdown with work in flight, in a child process so that a hang cannot stall the suite. The
# listener keeps the notifier thread busy in Python code while shutdown() runs, which makes the
# outcome deterministic.
SHUTDOWN_SCRIPT = r"""
import concurrent.futures as cf, sys, threading, time
import pygpukit as gp

s = gp.scheduler.Scheduler(workers=2, memory_capacity=1 << 26)
s.add_tenant("t", max_running=1)
s.add_listener(lambda rec: time.sleep(0.05))
release, started = threading.Event(), threading.Event()

def blocker():
    started.set()
    release.wait(20)
    return "last"

running = s.submit("t", blocker)
assert started.wait(20)
waiting = [s.submit("t", lambda: None) for _ in range(2)]
print("shutdown", flush=True)
th = threading.Thread(target=s.shutdown)
th.start()
time.sleep(0.2)
release.set()
th.join(20)
assert not th.is_alive()
assert all(f.done() for f in waiting + [running])  # shutdown runs every notification
assert running.result(timeout=0) == "last"
assert all(f.cancelled() and f.state == "cancelled" for f in waiting)
s.shutdown()
print("ok", flush=True)
"""


def test_shutdown_while_notifications_run_does_not_deadlock():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen(
        [sys.executable, "-c", SHUTDOWN_SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert p.stdout.readline().strip() == "shutdown"
        out, _ = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("shutdown() hung with notifications in flight")
    assert p.returncode == 0 and out.strip().endswith("ok"), out


def test_default_scheduler_is_shared(device):
    s = sm.default()
    assert s is sm.default() and isinstance(s, sm.Scheduler)
    assert s.device == device
    name = f"test-default-{threading.get_ident()}"
    s.add_tenant(name, "best_effort")
    try:
        assert s.submit(name, lambda: 11).result(timeout=WAIT) == 11
        quiesce(s, name)  # the process's exit shuts it down: leave nothing in flight
    finally:
        s.remove_tenant(name)
    assert name not in s.tenants()


# ---- concurrency and leaks ----


def test_many_threads_submit_concurrently(h, device, rng):
    s = h.scheduler(workers=4)
    s.add_tenant("g", "guaranteed", memory_request=16 * MiB)
    s.add_tenant("u", "burstable", memory_request=8 * MiB, memory_limit=32 * MiB)
    s.add_tenant("e", "best_effort", max_inflight=2)
    tenants = ["g", "u", "e"]
    n_threads, per_thread = 8, 50
    data = [rand(rng, (128,), "int64", small=True) for _ in range(n_threads)]
    inputs = [gp.asarray(d, device=device) for d in data]
    barrier = threading.Barrier(n_threads)
    futs = [None] * n_threads
    errors = []

    def submitter(t):
        try:
            barrier.wait(WAIT)
            futs[t] = [
                s.submit(
                    tenants[(t + i) % 3],
                    lambda x, k: x * k + t,
                    inputs[t],
                    i,
                    memory=4 * KiB,
                    priority=i % 4,
                )
                for i in range(per_thread)
            ]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT)
    assert not errors and not any(th.is_alive() for th in threads)
    for t in range(n_threads):
        for i, fut in enumerate(futs[t]):
            check_equal(fut.result(timeout=WAIT), data[t] * i + t)
    del fut
    s.drain()
    st = s.stats()
    total = n_threads * per_thread
    assert st["completed"] == st["admitted"] == total
    assert st["failed"] == st["rejected"] == st["cancelled"] == 0
    assert sum(st["tenants"][n]["completed"] for n in tenants) == total
    assert st["tenants"]["e"]["max_inflight_seen"] <= 2
    # Nothing leaks: no queue, no admitted estimate, no borrowed memory.
    assert (st["pending"], st["active"], st["running"], st["ready"]) == (0, 0, 0, 0)
    assert st["memory_borrowed"] == 0 and st["guaranteed_running"] == 0
    assert st["memory_reserved"] == 24 * MiB
    until(lambda: all(s.stats()["tenants"][n]["inflight"] == 0 for n in tenants))
    for n in tenants:
        v = st["tenants"][n]
        assert (v["memory_admitted"], v["pending"], v["active"]) == (0, 0, 0)
        assert v["total_us"]["count"] == v["completed"]
    futs[:] = []  # the futures hold the results
    settle(device)
    assert [s.stats()["tenants"][n]["memory_used"] for n in tenants] == [0, 0, 0]


def test_nested_submission_from_a_task(sched, device, rng):
    sched.add_tenant("outer")
    sched.add_tenant("inner", "best_effort")
    x = rand(rng, (64,), "float64")
    gx = gp.asarray(x, device=device)

    def outer():
        inner = sched.submit("inner", lambda: gx * 3.0)
        return inner.result(timeout=WAIT) - 1.0

    check_equal(sched.submit("outer", outer).result(timeout=WAIT), x * 3.0 - 1.0)


def test_callables_are_released_once_tasks_end(sched, h):
    sched.add_tenant("t")
    sched.add_tenant("g", "guaranteed", memory_request=MiB, max_running=1)

    class Payload:
        alive = 0

        def __init__(self):
            Payload.alive += 1

        def __del__(self):
            Payload.alive -= 1

    def make(tenant, **kw):
        p = Payload()
        return sched.submit(tenant, lambda: p is not None, **kw)

    ran = [make("t") for _ in range(20)]
    b = h.blocker()
    block(sched, "g", b)
    cancelled = make("g")
    rejected = make("g", memory=2 * MiB)
    assert cancelled.cancel() and outcome(rejected) == "rejected"
    assert all(f.result(timeout=WAIT) for f in ran)
    b.release.set()
    quiesce(sched, "t")
    gc.collect()
    assert Payload.alive == 0  # though the futures are alive
    assert len(ran) == 20 and cancelled.cancelled()


# ---- best-effort matmuls split into row blocks ----


@pytest.mark.parametrize(
    "ashape, bshape",
    [((300, 40), (40, 33)), ((2, 130, 17), (17, 9)), ((5, 7), (7, 3)), ((257, 16), (16, 1))],
)
def test_best_effort_matmul_is_split_and_exact(h, device, rng, ashape, bshape):
    # A budget of ~10 rows per launch for these widths: many pieces, tails included.
    k, n = bshape
    batch = ashape[0] if len(ashape) == 3 else 1
    budget = 2 * batch * n * k * 10
    # Splitting is for best-effort tenants without an SM partition (test_sm_partitions.py).
    sched = h.scheduler(device=device, best_effort_sms=0, best_effort_slice_flops=budget)
    sched.add_tenant("be", "best_effort")
    sched.add_tenant("g", "guaranteed", memory_request=MiB)
    a, b = rand(rng, ashape, "float64"), rand(rng, bshape, "float64")
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    before = sched.stats()["tenants"]["be"]["launches"]
    out = sched.submit("be", lambda: ga @ gb).result(timeout=WAIT)
    launches = sched.stats()["tenants"]["be"]["launches"] - before
    m = ashape[-2]
    # Blocks of ~10 rows, rounded to keep 256-byte aligned starts (at most 32 rows here).
    assert launches >= min(-(-m // 32), 2) if m > 10 else launches >= 1
    check_dot(out, a @ b, np.abs(a) @ np.abs(b), k)
    # Unsplit for guaranteed tenants (one launch for the product), same values.
    before = sched.stats()["tenants"]["g"]["launches"]
    out_g = sched.submit("g", lambda: ga @ gb).result(timeout=WAIT)
    assert sched.stats()["tenants"]["g"]["launches"] - before <= 2
    check_dot(out_g, a @ b, np.abs(a) @ np.abs(b), k)


def test_best_effort_slice_flops_must_not_be_negative():
    with pytest.raises(ValueError, match="best_effort_slice_flops must be >= 0, got -1"):
        sm.Scheduler(best_effort_slice_flops=-1)
