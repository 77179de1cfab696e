"""Tracing and profiling.

The runtime always records kernel launches, host tasks, library calls, copies, allocations,
frees and scheduler task state changes in per-thread ring buffers (PYGPUKIT_TRACE=0 turns it
off; benchmarks/trace_overhead.py measures the cost). A profiling session also times every
launch on the device with a pair of events, resolved when the session ends (never on the
launch path):

    import pygpukit as gp
    with gp.profiler.profile() as prof:
        C = A @ B
        D = gp.exp(C) + 1
    print(prof.summary())     # per kernel: calls, GPU total / mean / p50 / p99, TFLOP/s, GB/s
    prof.export_chrome_trace("trace.json")   # chrome://tracing or https://ui.perfetto.dev
    prof.memory_timeline()    # [(ms, allocated bytes, reserved bytes, device), ...]

    @gp.profiler.profile()    # as a decorator: prof.last holds the latest call's session
    def step(): ...

    with gp.profiler.range("forward"):   # a named range: in the trace, and NVTX for Nsight
        ...

    r = gp.profiler.benchmark(lambda: A @ B, warmup=3, repeat=50, flush_l2=True)
    print(r.median_ms, r.p90_ms)

Ops declare their work (matmul FLOPs; bytes each elementwise op, reduction and copy moves),
which the table turns into achieved TFLOP/s and GB/s over device time. C++ services get the same
tables and exports from runtime/trace/profile.h.

A tracer failure (an event that cannot be created) turns GPU timing off; the session then warns
once and reports host times only. Records that do not fit a thread's ring (capacity(): 65536 by
default, PYGPUKIT_TRACE_CAPACITY) overwrite the oldest; dropped() counts them.
"""

import builtins
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
    "nvtx_available",
    "profile",
    "range",
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
    """One record. Times in ms from the tracer's start; gpu_ms is the launch's (or device
    copy's) time on the device in a profiling session, else None. By kind: launches carry the
    bytes and FLOPs their op declares (0: none declared); alloc / free the requested bytes and
    the pool's allocated / reserved after them; copy the bytes copied; task the task's id and
    the states it left and entered (name: its tenant); range a user range's span."""

    seq: int  # unique; increasing within a thread
    kind: str  # "kernel", "host_task", "library", "alloc", "free", "copy", "task", "range"
    name: str
    start_ms: float
    host_ms: float  # duration of the host call
    gpu_ms: float | None
    bytes: int
    flops: int
    allocated: int | None
    reserved: int | None
    device: str
    stream: int
    thread: int
    task: int | None = None
    from_state: str | None = None
    to_state: str | None = None


def _event(t):
    seq, kind, name, begin, end, gpu, nbytes, flops, alloc, resv, dev, stream, thread = t[:13]
    task, from_state, to_state = t[13:]
    return TraceEvent(
        seq=seq,
        kind=kind,
        name=name,
        start_ms=begin / 1e6,
        host_ms=(end - begin) / 1e6,
        gpu_ms=gpu,
        bytes=nbytes,
        flops=flops,
        allocated=alloc,
        reserved=resv,
        device=dev,
        stream=stream,
        thread=thread,
        task=task,
        from_state=from_state,
        to_state=to_state,
    )


def _percentile(sorted_values, q):
    """Linear-interpolation percentile (NumPy's default) of an ascending list."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Profile:
    """A profiling session (see the module doc). `events` holds the records of the latest
    session; as a decorator each call is a session and `last` is the latest one's Profile.
    The tables and exports come from the C++ runtime (runtime/trace/profile.h), which services
    embedding it use too."""

    def __init__(self, gpu_timing=True, name=None):
        self.gpu_timing = gpu_timing
        self.name = None if name is None else str(name)
        self.events = []
        self.last = self
        self._session = None
        self._records = _trace.Records()

    def __enter__(self):
        if self._session is not None:
            raise RuntimeError("profile: this session is already open (sessions do not nest)")
        self._session = _trace.Session(self.gpu_timing)
        if self.name is not None:
            _trace.push_range(self.name)
        return self

    def __exit__(self, *exc):
        session, self._session = self._session, None
        if self.name is not None:
            _trace.pop_range()
        self._records = session.stop()
        self.events = [_event(t) for t in self._records.events()]
        status = _trace.status()
        if status is not None and self.gpu_timing:
            warnings.warn(status, RuntimeWarning, stacklevel=2)
        return False

    def kernels(self):
        """Per launched name (kernels, host tasks, library calls, copies), in order of first
        launch: {name: {calls, kind, timed, gpu_total_ms, gpu_mean_ms, gpu_p50_ms, gpu_p99_ms,
        host_total_ms, flops, bytes, tflops, gbps}}. GPU fields are None without device times;
        flops / bytes sum what the ops declare, and tflops / gbps rate them over device time
        (None when not declared)."""
        return dict(self._records.kernels())

    def summary(self, sort_by="gpu_total_ms"):
        """The per-kernel table as text, largest `sort_by` first (calls, gpu_total_ms,
        gpu_mean_ms, gpu_p50_ms, gpu_p99_ms, host_total_ms, tflops or gbps)."""
        return self._records.summary(sort_by)

    def memory_timeline(self):
        """[(ms, allocated bytes, reserved bytes, device)] after each allocation and free, per
        the pool of the event's device (all devices interleaved in time order)."""
        return self._records.memory_timeline()

    def chrome_trace(self):
        """The session as a Chrome trace / Perfetto JSON object: host calls and ranges on their
        thread's track ("X" spans), device times on a track per stream, allocations, frees and
        task state changes as instants, memory as counter tracks per device. Device start
        times are not measured: a launch's device span starts at its host launch or when the
        stream's previous span ends, whichever is later (a stream runs its work in order)."""
        return json.loads(self._records.chrome_trace_json())

    def export_chrome_trace(self, path):
        """Writes chrome_trace() to `path` as JSON."""
        with open(path, "w") as f:
            f.write(self._records.chrome_trace_json())

    def __call__(self, fn):
        # Each decorated call is its own session; `last` is the newest one.
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            session = Profile(self.gpu_timing, self.name)
            self.last = session
            with session:
                return fn(*args, **kwargs)

        return wrapper


def profile(gpu_timing=True, name=None):
    """A profiling session: `with gp.profiler.profile() as prof:` or `@gp.profiler.profile()`.
    gpu_timing=False keeps host records only (no events). `name` also marks the session as a
    range (NVTX and the trace)."""
    return Profile(gpu_timing, name)


class range:  # noqa: A001 - the profiler's vocabulary (torch.profiler.record_function, nvtx)
    """A named range of this thread's work: `with gp.profiler.range("step"):` or
    `@gp.profiler.range("step")`. It shows in the trace (kind "range", exported as a span) and,
    where the build has NVTX (nvtx_available()), in Nsight Systems and other NVTX tools.
    Ranges nest."""

    def __init__(self, name):
        self.name = str(name)

    def __enter__(self):
        _trace.push_range(self.name)
        return self

    def __exit__(self, *exc):
        _trace.pop_range()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


def nvtx_available():
    """Whether ranges are also NVTX ranges in this build (NVTX headers found at build time)."""
    return _trace.nvtx_available()


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
    for _ in builtins.range(warmup):
        fn(*args, **kwargs)
    scratch = None
    if flush_l2:
        l2 = _core.device_properties(dev)["l2_cache_bytes"] or (8 << 20)
        scratch = _core.zeros((2 * l2,), dtype=_core.uint8, device=dev)
    pairs = []
    for _ in builtins.range(repeat):
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
