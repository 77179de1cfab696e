"""Tracing and profiling.

The runtime always records kernel launches, host tasks, library calls, allocations and frees in
per-thread ring buffers (about 0.1 us per record; PYGPUKIT_TRACE=0 turns it off).
A profiling session also times every launch on the device with a pair of events, resolved when
the session ends (never on the launch path):

    import pygpukit as gp
    with gp.profiler.profile() as prof:
        C = A @ B
        D = gp.exp(C) + 1
    print(prof.summary())                 # per kernel: calls, total / mean / p50 / p99 GPU time
    prof.export_chrome_trace("trace.json")   # chrome://tracing or https://ui.perfetto.dev
    prof.memory_timeline()                # [(ms, allocated bytes, reserved bytes), ...]

    @gp.profiler.profile()                # as a decorator: prof.last holds the latest call's
    def step(): ...

    r = gp.profiler.benchmark(lambda: A @ B, warmup=3, repeat=50, flush_l2=True)
    print(r.median_ms, r.p90_ms)

A tracer failure (an event that cannot be created) turns GPU timing off; the session then warns
once and reports host times only. Records that do not fit a thread's ring (capacity(): 65536 by
default, PYGPUKIT_TRACE_CAPACITY) overwrite the oldest; dropped() counts them.
"""

import dataclasses
import functools
import json
import math
import statistics
import warnings

from . import _core

_trace = _core._trace

__all__ = [
    "BenchmarkResult",
    "Profile",
    "TraceEvent",
    "benchmark",
    "capacity",
    "dropped",
    "enabled",
    "profile",
    "set_capacity",
    "set_enabled",
]


def enabled():
    """Whether the runtime records its work (on unless PYGPUKIT_TRACE=0 or set_enabled(False))."""
    return _trace.enabled()


def set_enabled(on):
    """Turns the always-on records on or off (profiling sessions record nothing while off)."""
    _trace.set_enabled(bool(on))


def capacity():
    """Records each thread's ring keeps before overwriting its oldest."""
    return _trace.capacity()


def set_capacity(records):
    """Ring size, in records, for threads that start recording after the call."""
    _trace.set_capacity(int(records))


def dropped():
    """Records lost so far to full rings."""
    return _trace.dropped()


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One record. Times in ms from the tracer's start; gpu_ms is the launch's time on the
    device (profiling sessions) or None; allocated / reserved: the pool after an alloc / free."""

    seq: int  # unique; increasing within a thread
    kind: str  # "kernel", "host_task", "library", "alloc", "free"
    name: str
    start_ms: float
    host_ms: float  # duration of the host call
    gpu_ms: float | None
    bytes: int
    allocated: int | None
    reserved: int | None
    device: str
    stream: int
    thread: int


def _event(t):
    seq, kind, name, begin, end, gpu, nbytes, alloc, resv, dev, stream, thread = t
    return TraceEvent(
        seq=seq,
        kind=kind,
        name=name,
        start_ms=begin / 1e6,
        host_ms=(end - begin) / 1e6,
        gpu_ms=None if gpu < 0 else gpu,
        bytes=nbytes,
        allocated=None if alloc < 0 else alloc,
        reserved=None if resv < 0 else resv,
        device=dev,
        stream=stream,
        thread=thread,
    )


def _percentile(sorted_values, q):
    """Linear-interpolation percentile (NumPy's default) of an ascending list."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


_LAUNCHES = ("kernel", "host_task", "library")


class Profile:
    """A profiling session (see the module doc). `events` holds the records of the latest
    session; as a decorator each call is a session and `last` is the latest one's Profile."""

    def __init__(self, gpu_timing=True):
        self.gpu_timing = gpu_timing
        self.events = []
        self.last = self
        self._since = None

    def __enter__(self):
        if self._since is not None:
            raise RuntimeError("profile: this session is already open (sessions do not nest)")
        self._since = _trace.mark()
        if self.gpu_timing:
            _trace.begin_profiling()
        return self

    def __exit__(self, *exc):
        try:
            # The session's work finishes first, so that its records are complete (CPU streams
            # free the buffers their tasks held on their own threads, after the tasks).
            for dev in _core.devices():
                _core.synchronize(dev)
            rows = _trace.collect(self._since)
        finally:
            if self.gpu_timing:
                _trace.end_profiling()
            self._since = None
        self.events = [_event(t) for t in rows]
        status = _trace.status()
        if status is not None and self.gpu_timing:
            warnings.warn(status, RuntimeWarning, stacklevel=2)
        return False

    def kernels(self):
        """Per launched name: {name: {calls, kind, gpu_total_ms, gpu_mean_ms, gpu_p50_ms,
        gpu_p99_ms, host_total_ms}} (GPU fields None without device times)."""
        groups = {}
        for e in self.events:
            if e.kind in _LAUNCHES:
                groups.setdefault(e.name, []).append(e)
        out = {}
        for name, es in groups.items():
            gpu = sorted(e.gpu_ms for e in es if e.gpu_ms is not None)
            out[name] = {
                "calls": len(es),
                "kind": es[0].kind,
                "gpu_total_ms": sum(gpu) if gpu else None,
                "gpu_mean_ms": statistics.fmean(gpu) if gpu else None,
                "gpu_p50_ms": _percentile(gpu, 50) if gpu else None,
                "gpu_p99_ms": _percentile(gpu, 99) if gpu else None,
                "host_total_ms": sum(e.host_ms for e in es),
            }
        return out

    def summary(self, sort_by="gpu_total_ms"):
        """The per-kernel table as text, largest `sort_by` first (a kernels() field)."""
        fields = ("calls", "gpu_total_ms", "gpu_mean_ms", "gpu_p50_ms", "gpu_p99_ms")
        if sort_by not in fields + ("host_total_ms",):
            raise ValueError(f"summary: sort_by must be one of {fields + ('host_total_ms',)}")
        table = self.kernels()

        def key(item):
            v = item[1].get(sort_by)
            return -(v if v is not None else -1)

        def ms(v):
            return "-" if v is None else f"{v:.4f}"

        head = f"{'name':40s} {'calls':>7s} {'gpu total':>11s} {'mean':>9s} {'p50':>9s} {'p99':>9s}"
        lines = [head + f" {'host total':>11s}", "-" * (len(head) + 12)]
        for name, s in sorted(table.items(), key=key):
            lines.append(
                f"{name[:40]:40s} {s['calls']:7d} {ms(s['gpu_total_ms']):>11s} "
                f"{ms(s['gpu_mean_ms']):>9s} {ms(s['gpu_p50_ms']):>9s} {ms(s['gpu_p99_ms']):>9s}"
                f" {ms(s['host_total_ms']):>11s}"
            )
        allocs = sum(1 for e in self.events if e.kind == "alloc")
        lines.append(f"{allocs} allocations, {len(self.events)} records (times in ms)")
        return "\n".join(lines)

    def memory_timeline(self):
        """[(ms, allocated bytes, reserved bytes)] after each allocation and free, per the
        pool of the event's device (all devices interleaved in time order)."""
        return [
            (e.start_ms, e.allocated, e.reserved)
            for e in self.events
            if e.kind in ("alloc", "free") and e.allocated is not None
        ]

    def chrome_trace(self):
        """The session as a Chrome trace / Perfetto JSON object: host calls on their thread's
        track ("X" spans), device times on a track per stream, memory as counter tracks per
        device. Device start times are not measured: a launch's device span starts at its host
        launch or when the stream's previous span ends, whichever is later (a stream runs its
        work in order)."""
        events = []
        stream_tids = {}  # (device, stream) -> track id on the device "process"
        stream_free_at = {}
        for e in self.events:
            args = {"seq": e.seq, "device": e.device}
            if e.kind in _LAUNCHES:
                events.append(
                    {
                        "name": e.name,
                        "cat": e.kind,
                        "ph": "X",
                        "ts": e.start_ms * 1e3,
                        "dur": e.host_ms * 1e3,
                        "pid": 0,
                        "tid": e.thread,
                        "args": args,
                    }
                )
                if e.gpu_ms is not None:
                    key = (e.device, e.stream)
                    tid = stream_tids.setdefault(key, len(stream_tids) + 1)
                    start = max(e.start_ms * 1e3, stream_free_at.get(key, 0.0))
                    stream_free_at[key] = start + e.gpu_ms * 1e3
                    events.append(
                        {
                            "name": e.name,
                            "cat": "gpu",
                            "ph": "X",
                            "ts": start,
                            "dur": e.gpu_ms * 1e3,
                            "pid": 1,
                            "tid": tid,
                            "args": args,
                        }
                    )
            else:
                args["bytes"] = e.bytes
                events.append(
                    {
                        "name": e.kind,
                        "cat": "memory",
                        "ph": "i",
                        "s": "t",
                        "ts": e.start_ms * 1e3,
                        "pid": 0,
                        "tid": e.thread,
                        "args": args,
                    }
                )
                if e.allocated is not None:
                    events.append(
                        {
                            "name": f"memory {e.device}",
                            "ph": "C",
                            "ts": e.start_ms * 1e3,
                            "pid": 2,
                            "args": {"allocated": e.allocated, "reserved": e.reserved},
                        }
                    )
        meta = [
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "host"}},
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "device"}},
            {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "memory"}},
        ]
        for (dev, stream), tid in stream_tids.items():
            name = f"{dev} stream {stream:#x}"
            meta.append(
                {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
            )
        for thread in sorted({e.thread for e in self.events}):
            meta.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": 0,
                    "tid": thread,
                    "args": {"name": f"thread {thread}"},
                }
            )
        return {"traceEvents": meta + events, "displayTimeUnit": "ms"}

    def export_chrome_trace(self, path):
        """Writes chrome_trace() to `path` as JSON."""
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)

    def __call__(self, fn):
        # Each decorated call is its own session; `last` is the newest one.
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            session = Profile(self.gpu_timing)
            self.last = session
            with session:
                return fn(*args, **kwargs)

        return wrapper


def profile(gpu_timing=True):
    """A profiling session: `with gp.profiler.profile() as prof:` or `@gp.profiler.profile()`.
    gpu_timing=False keeps host records only (no events)."""
    return Profile(gpu_timing)


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    """Device times of `repeat` calls, in ms."""

    times_ms: tuple
    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    p10_ms: float
    p90_ms: float
    p99_ms: float


def benchmark(fn, *args, warmup=3, repeat=20, flush_l2=False, device=None, **kwargs):
    """Times fn(*args, **kwargs) with events on `device`'s stream (default: the default device):
    `warmup` untimed calls, then `repeat` timed ones, each between its own pair of events.
    flush_l2 rewrites a buffer twice the L2 size before each timed call (outside the events), so
    that the call starts with a cold cache."""
    if repeat < 1:
        raise ValueError(f"benchmark: repeat must be at least 1, got {repeat}")
    if warmup < 0:
        raise ValueError(f"benchmark: warmup must be at least 0, got {warmup}")
    dev = _core.default_device() if device is None else _core.Device(device)
    for _ in range(warmup):
        fn(*args, **kwargs)
    scratch = None
    if flush_l2:
        l2 = _core.device_properties(dev)["l2_cache_bytes"] or (8 << 20)
        scratch = _core.zeros((2 * l2,), dtype=_core.uint8, device=dev)
    pairs = []
    for _ in range(repeat):
        if scratch is not None:
            scratch += 1
        start, end = _core.Event(dev), _core.Event(dev)
        start.record()
        fn(*args, **kwargs)
        end.record()
        pairs.append((start, end))
    times = [s.elapsed_time(e) for s, e in pairs]
    ordered = sorted(times)
    return BenchmarkResult(
        times_ms=tuple(times),
        median_ms=statistics.median(times),
        mean_ms=statistics.fmean(times),
        min_ms=ordered[0],
        max_ms=ordered[-1],
        p10_ms=_percentile(ordered, 10),
        p90_ms=_percentile(ordered, 90),
        p99_ms=_percentile(ordered, 99),
    )
