"""The GPU scheduler: tenants with QoS classes share a device; their tasks pass admission control
and run concurrently on per-tenant priority streams, paced so that guaranteed work keeps its
latency while best-effort work fills the GPU.

    import pygpukit as gp
    sched = gp.scheduler.Scheduler()                      # or gp.scheduler.default()
    sched.add_tenant("online", qos="guaranteed", memory_request=2 << 30)
    sched.add_tenant("batch", qos="best_effort")
    fut = sched.submit("batch", lambda: a @ b, memory=3 * a.nbytes)
    with sched.task("online", memory=1 << 20):            # the block runs as a task
        y = x @ w                                          # on the tenant's stream and quota
    print(fut.result().shape, sched.stats()["tenants"]["online"]["total_us"]["p99"])
    r = await sched.submit("batch", f)                    # futures are awaitable (asyncio)

QoS classes (``qos=``): ``"guaranteed"`` (memory request == limit, reserved; admitted first;
never paced; its buffers are never spilled), ``"burstable"`` (request reserved, may grow to its
limit while memory is free), ``"best_effort"`` (no reservation; paced first, especially while
guaranteed work runs; its evictable buffers are spilled first).

Task states: pending -> admitted -> running -> completed | failed | cancelled, and
pending -> rejected. Admission is deterministic: the same submissions, completions and
cancellations give the same decisions (rules in native/runtime/sched/admission.h). A task's future
raises `TaskRejected` when rejected, `concurrent.futures.CancelledError` when cancelled, and the
task's own exception when it failed. Results are ready once the future is done; work queued
on the device before a task started is visible to it.
"""

import asyncio as _asyncio
import atexit as _atexit
import collections as _collections
import concurrent.futures as _cf
import functools as _functools
import logging as _logging
import numbers as _numbers
import threading as _threading
import time as _time
import weakref as _weakref

from . import _core

_s = _core._scheduler

__all__ = [
    "QOS_CLASSES",
    "Scheduler",
    "TaskFuture",
    "TaskRejected",
    "default",
]

QOS_CLASSES = ("guaranteed", "burstable", "best_effort")


# Admission control refused the task (a RuntimeError; the message says why). Defined by the
# extension, which raises it for task blocks too.
TaskRejected = _s.TaskRejected


class TaskFuture(_cf.Future):
    """A `concurrent.futures.Future` for a scheduled task; also awaitable from asyncio.

    `id`, `tenant`, `state` and `history` describe the task; `cancel()` cancels a pending or
    admitted task and asks a running one to stop (`cancel_requested`)."""

    def __init__(self, core, handle):
        super().__init__()
        self._core = core
        self._handle = handle
        self._scheduler_key = id(core)

    @property
    def id(self):
        return self._handle.id

    @property
    def tenant(self):
        return self._handle.tenant

    @property
    def state(self):
        """'pending', 'admitted', 'running', 'completed', 'failed', 'cancelled' or 'rejected'."""
        return self._handle.state

    @property
    def history(self):
        """The task's transitions: dicts with from, to, time_ns and reason."""
        return self._handle.history

    @property
    def cancel_requested(self):
        return self._handle.cancel_requested

    def running(self):
        return self._handle.state == "running"

    def cancel(self):
        if self._core.cancel(self._handle):
            self._handle.wait()  # the cancellation is final: the future follows it now
            return super().cancel()
        return super().cancelled()

    def result(self, timeout=None):
        self._check_wait("result")
        return super().result(timeout)

    def exception(self, timeout=None):
        self._check_wait("exception")
        return super().exception(timeout)

    def _check_wait(self, what):
        # Futures are settled on the scheduler's notifier thread, which also runs listeners: a
        # listener waiting there for an unfinished future would wait for itself.
        if not self.done() and self._core.on_notifier_thread():
            raise RuntimeError(
                f"TaskFuture.{what}: called from a listener of the scheduler for a task that is "
                "not done (listeners run on the thread that settles futures: it would wait for "
                "itself)"
            )

    def _invoke_callbacks(self):
        # concurrent.futures runs done callbacks on the thread that settles the future: here the
        # scheduler's notifier, which settles every future, so one callback that waits (on
        # another task's result, say) would stall them all. They run on callback threads
        # instead, in the order added; a future settled by its caller (cancel) runs its
        # callbacks at once, as concurrent.futures does.
        callbacks = list(self._done_callbacks)
        if not callbacks:
            return
        if self._core.on_notifier_thread():
            _callbacks.submit(self._scheduler_key, lambda: _run_callbacks(self, callbacks))
        else:
            _run_callbacks(self, callbacks)

    def __await__(self):
        return _asyncio.wrap_future(self).__await__()

    def __repr__(self):
        return f"<TaskFuture id={self.id} tenant={self.tenant!r} state={self.state}>"


class _TaskBlock:
    """Context manager of `Scheduler.task`: the block runs as a task on this thread."""

    def __init__(self, scheduler, tenant, kwargs):
        self._scheduler = scheduler
        self._tenant = tenant
        self._kwargs = kwargs
        self._inline = None
        self.task = None

    def __enter__(self):
        if self._inline is not None:
            raise RuntimeError(
                "Scheduler.task: the block is already open (a block is entered once)"
            )
        try:
            _asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:  # a block's scopes are per thread: coroutines interleaving on it would mix them
            raise RuntimeError(
                "Scheduler.task: a task block cannot be used in a coroutine (blocks of "
                "interleaved coroutines would share this thread's stream and quota, and "
                "waiting for admission would block the event loop); use "
                "`await sched.submit(tenant, fn)` instead"
            )
        self._inline = self._scheduler._core.begin(self._tenant, **self._kwargs)
        self.task = self._inline.task
        return self

    def __exit__(self, exc_type, exc, tb):
        inline, self._inline = self._inline, None
        if inline is None:
            raise RuntimeError("Scheduler.task: the block is not open (never entered, or ended)")
        error = None
        if exc_type is not None:
            try:
                error = f"{exc_type.__name__}: {exc}"
            except Exception:  # noqa: BLE001 - a failing __str__ must not keep the task open
                error = exc_type.__name__
        inline.end(error)
        return False

    @property
    def id(self):
        return self.task.id

    @property
    def state(self):
        return self.task.state

    def wait(self, timeout=None):
        """Waits until the block's GPU work is done; True when it is."""
        return self.task.wait(timeout)


_LOGGER = _logging.getLogger("concurrent.futures")


def _run_callbacks(fut, callbacks):
    for fn in callbacks:
        try:
            fn(fut)
        except Exception:  # noqa: BLE001 - as concurrent.futures: logged, the others still run
            _LOGGER.exception("exception calling callback for %r", fut)


class _CallbackThreads:
    """Runs futures' done callbacks off the notifier thread. A job waits for an idle thread only
    while none is busy with a callback that blocks: a thread is started whenever the jobs
    queued outnumber the idle threads, and idle threads end after a while. Counts the jobs of
    each scheduler, so that drain() can wait for them."""

    def __init__(self):
        self._cv = _threading.Condition()
        self._jobs = _collections.deque()
        self._idle = 0
        self._pending = _collections.Counter()  # scheduler key -> jobs queued or running
        self._local = _threading.local()

    def submit(self, key, job):
        with self._cv:
            self._jobs.append((key, job))
            self._pending[key] += 1
            if len(self._jobs) > self._idle:
                _threading.Thread(
                    target=self._loop, name="pygpukit-future-callbacks", daemon=True
                ).start()
            else:
                self._cv.notify()

    def on_callback_thread(self):
        return getattr(self._local, "runner", False)

    def wait_idle(self, key, timeout=None):
        """Waits until no callback of scheduler `key` is queued or running."""
        with self._cv:
            return self._cv.wait_for(lambda: self._pending[key] == 0, timeout)

    def _loop(self):
        self._local.runner = True
        while True:
            with self._cv:
                self._idle += 1
                if not self._cv.wait_for(lambda: self._jobs, timeout=10.0):
                    self._idle -= 1
                    return
                self._idle -= 1
                key, job = self._jobs.popleft()
            try:
                job()
            finally:
                with self._cv:
                    self._pending[key] -= 1
                    if self._pending[key] == 0:
                        del self._pending[key]
                    self._cv.notify_all()


_callbacks = _CallbackThreads()


_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _int(value, what, op, lo, hi):
    """`value` as an int within [lo, hi]: TypeError / ValueError naming the op and argument."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise TypeError(f"{op}: {what} must be an integer, got {type(value).__name__}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"{op}: {what} {value} is outside [{lo}, {hi}]")
    return value


def _seconds(value, what, op):
    """None, or a real number of seconds >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(
            f"{op}: {what} must be a number of seconds or None, got {type(value).__name__}"
        )
    if not value >= 0:  # NaN too
        raise ValueError(f"{op}: {what} must be >= 0, got {value}")
    return float(value)


def _flag(value, what, op):
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {what} must be a bool, got {type(value).__name__}")
    return value


def _options(name, memory, priority, deadline, timeout, depends_on, op="submit"):
    deps = []
    for d in depends_on or ():
        dep = d.id if isinstance(d, (TaskFuture, _TaskBlock)) else d
        deps.append(_int(dep, "depends_on", op, 0, 2**64 - 1))
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{op}: name must be a str, got {type(name).__name__}")
    return dict(
        name=name or "",
        memory=_int(memory, "memory", op, 0, _INT64[1]),
        priority=_int(priority, "priority", op, *_INT32),
        deadline=_seconds(deadline, "deadline", op),
        timeout=_seconds(timeout, "timeout", op),
        depends_on=deps,
    )


_live = _weakref.WeakSet()


class Scheduler:
    """The scheduler of one device.

    Args:
        device: the device (default: the default device).
        workers: threads that run task callables at once.
        memory_capacity: bytes tasks are admitted against (default: the pool's limit, else the
            device's memory).
        inflight_budget: kernels in flight for a burstable tenant with compute_share 1.
        best_effort_inflight: the same for a best-effort tenant (one running, one queued).
        best_effort_inflight_while_guaranteed: best-effort kernels in flight while a
            guaranteed task runs, for best-effort tenants without an SM partition (0: every
            best-effort tenant waits until it ends).
        best_effort_sms: SMs best-effort tenants are confined to (a spatial partition of the
            device, CUDA green contexts; on the CPU device, worker threads): -1 (default) 85% of
            the device, so the rest is free for the other tenants at once however long
            best-effort kernels run; 0: no partition. A tenant's own ``sms`` overrides it.
        best_effort_slice_flops: best-effort matmuls of tenants without a partition are split
            by rows into launches of at most this many FLOPs, so guaranteed work waits for one
            piece (0: no splitting).
        best_effort_preemption: while a guaranteed task runs, matmuls of best-effort tenants
            without a partition run on preemptible kernels (sm90, 16-bit) that stop within
            microseconds, keeping their partial sums, and resume when no guaranteed task is
            left; such a matmul returns when it is done. The tenant's ``preemptions`` stat
            counts the stops. Off by default: best-effort work then gets nothing while
            guaranteed work runs without a pause; for a service with idle time between
            requests it keeps more of the guaranteed latency than the partition
            (docs/scheduler.md).
        record_admission: keep admission inputs and decisions (for `decisions()` and
            `replay_decisions()`).
    """

    def __init__(
        self,
        device=None,
        *,
        workers=4,
        memory_capacity=0,
        inflight_budget=32,
        best_effort_inflight=2,
        best_effort_inflight_while_guaranteed=1,
        best_effort_sms=-1,
        best_effort_slice_flops=1 << 37,
        best_effort_preemption=False,
        record_admission=False,
        history_capacity=4096,
    ):
        op = "Scheduler"
        self._core = _s.Scheduler(
            device,
            _int(workers, "workers", op, *_INT32),
            _int(memory_capacity, "memory_capacity", op, *_INT64),
            _int(inflight_budget, "inflight_budget", op, *_INT32),
            _int(best_effort_inflight, "best_effort_inflight", op, *_INT32),
            _int(
                best_effort_inflight_while_guaranteed,
                "best_effort_inflight_while_guaranteed",
                op,
                *_INT32,
            ),
            _int(best_effort_sms, "best_effort_sms", op, *_INT32),
            _int(best_effort_slice_flops, "best_effort_slice_flops", op, *_INT64),
            _flag(best_effort_preemption, "best_effort_preemption", op),
            _flag(record_admission, "record_admission", op),
            _int(history_capacity, "history_capacity", op, 0, 2**32),
        )
        _live.add(self)

    @property
    def device(self):
        return self._core.device

    @property
    def memory_capacity(self):
        return self._core.memory_capacity

    def add_tenant(
        self,
        name,
        qos="burstable",
        *,
        memory_request=0,
        memory_limit=0,
        compute_share=1.0,
        max_inflight=0,
        stream_priority=None,
        sms=None,
        streams=1,
        max_running=0,
        queue_capacity=1024,
    ):
        """Adds a tenant. ValueError for a bad spec or when guaranteed and burstable requests
        would exceed the capacity.

        sms: SMs the tenant's kernels are confined to (rounded up to the driver's granularity,
        8 on Hopper; ``stats()`` tells the size); 0: the whole device; None: by class
        (best-effort: the scheduler's ``best_effort_sms``, the others the whole device)."""
        op = "add_tenant"
        if not isinstance(name, str):
            raise TypeError(f"{op}: name must be a str, got {type(name).__name__}")
        if not isinstance(qos, str):
            raise TypeError(f"{op}: qos must be a str, got {type(qos).__name__}")
        if isinstance(compute_share, bool) or not isinstance(compute_share, _numbers.Real):
            raise TypeError(
                f"{op}: compute_share must be a number, got {type(compute_share).__name__}"
            )
        self._core.add_tenant(
            name,
            qos,
            _int(memory_request, "memory_request", op, *_INT64),
            _int(memory_limit, "memory_limit", op, *_INT64),
            float(compute_share),
            _int(max_inflight, "max_inflight", op, *_INT32),
            None
            if stream_priority is None
            else _int(stream_priority, "stream_priority", op, *_INT32),
            sms,
            _int(streams, "streams", op, *_INT32),
            _int(max_running, "max_running", op, *_INT32),
            _int(queue_capacity, "queue_capacity", op, *_INT32),
        )
        return name

    def remove_tenant(self, name):
        """Cancels the tenant's waiting tasks, waits for its running ones, removes it."""
        if not isinstance(name, str):
            raise TypeError(f"remove_tenant: name must be a str, got {type(name).__name__}")
        self._core.remove_tenant(name)

    def tenants(self):
        return self._core.tenants()

    def submit(
        self,
        tenant,
        fn,
        *args,
        memory=0,
        priority=0,
        deadline=None,
        timeout=None,
        depends_on=(),
        name=None,
        **kwargs,
    ):
        """Submits ``fn(*args, **kwargs)`` for `tenant` and returns a `TaskFuture`.

        memory: estimate of the device bytes the task allocates (admission control);
        priority: higher first; timeout (seconds from now) / deadline (``time.monotonic()``
        seconds): the task is rejected if not admitted by then; depends_on: tasks (futures or
        ids) that must complete first (the task is cancelled if one does not)."""
        if not callable(fn):
            raise TypeError(f"submit: {fn!r} is not callable")
        result_box = {}

        def body():
            try:
                result_box["value"] = fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - handed to the future
                result_box["error"] = e
                raise

        if not isinstance(tenant, str):
            raise TypeError(f"submit: tenant must be a str, got {type(tenant).__name__}")
        if name is None:
            name = str(getattr(fn, "__name__", ""))
        opts = _options(name, memory, priority, deadline, timeout, depends_on)
        handle = self._core.submit(tenant, body, **opts)
        fut = TaskFuture(self._core, handle)
        handle.add_done_callback(_functools.partial(_settle, fut, result_box))
        return fut

    def task(
        self, tenant, *, memory=0, priority=0, deadline=None, timeout=None, depends_on=(), name=None
    ):
        """Context manager: the block runs as a task of `tenant` on this thread (waiting for
        admission first). Ops in it use the tenant's stream, quota and pacing; an exception
        fails the task and propagates. Work queued after the block sees its results."""
        if not isinstance(tenant, str):
            raise TypeError(f"task: tenant must be a str, got {type(tenant).__name__}")
        return _TaskBlock(
            self, tenant, _options(name, memory, priority, deadline, timeout, depends_on, "task")
        )

    def cancel(self, future):
        return future.cancel()

    def add_listener(self, fn):
        """Calls ``fn(record)`` for every task transition, in order, on a runtime thread."""
        if not callable(fn):
            raise TypeError(f"add_listener: {fn!r} is not callable")
        self._core.add_listener(fn)

    def history(self):
        """The most recent transitions (dicts: task, tenant, from, to, time_ns, reason)."""
        return self._core.history()

    def decisions(self):
        """Admission decisions so far as (task, state, reason) (record_admission=True)."""
        return self._core.decisions()

    def replay_decisions(self):
        """Re-runs the recorded admission inputs on a fresh controller; equals `decisions()`."""
        return self._core.replay_decisions()

    def stats(self):
        """Queue lengths, counts, memory and per-tenant latency percentiles (microseconds)."""
        return self._core.stats()

    def drain(self, timeout=None):
        """Waits until no task is pending, admitted or running and the done callbacks of their
        futures have run; at most `timeout` seconds (None: no limit). True when drained.
        Ctrl-C interrupts the wait. RuntimeError from a task, a callback or a task block of
        this scheduler (it would wait for itself)."""
        if _callbacks.on_callback_thread():
            raise RuntimeError(
                "drain: called from a future's done callback (it would wait for the callbacks, "
                "its own included)"
            )
        start = _time.monotonic()
        if not self._core.drain(timeout):
            return False
        left = None if timeout is None else max(0.0, timeout - (_time.monotonic() - start))
        return _callbacks.wait_idle(id(self._core), left)

    def shutdown(self):
        """Cancels waiting tasks, waits for running ones and stops the threads. Idempotent."""
        self._core.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        return False


def _settle(fut, box, handle):
    state = handle.state
    if state == "completed":
        fut.set_result(box.get("value"))
    elif state == "cancelled":
        _cf.Future.cancel(fut)  # not TaskFuture.cancel: the task is already cancelled
        fut.set_running_or_notify_cancel()
    elif state == "rejected":
        fut.set_exception(TaskRejected(handle.error))
    else:
        err = box.get("error")
        fut.set_exception(err if err is not None else RuntimeError(handle.error))


_default = None
_default_lock = _threading.Lock()


def default():
    """The process's scheduler for the default device (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Scheduler()
        return _default


@_atexit.register
def _shutdown_all():
    for s in list(_live):
        try:
            s.shutdown()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
