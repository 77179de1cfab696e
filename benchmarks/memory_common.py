"""Shared pieces of the memory benchmarks (benchmarks/memory.py, memory_frag.py): the targets,
the optional peers (torch, CuPy, the CUDA driver through ctypes), timing loops and tables."""

import ctypes
import gc
import statistics
import time

MiB = 1 << 20
GiB = 1 << 30

# Targets and anchors of the issue (H100 SXM).
TARGET_EMPTY_US = 2.0
TARGET_FRAG_RATIO = 0.95
TARGET_TRANSFER_GBS = 25.0
ANCHOR_PINNED_GBS = 55.0


# ---------------------------------------------------------------- helpers


class Peers:
    """torch / CuPy / the CUDA driver when usable for `device`, else None with a note why."""

    def __init__(self, device):
        self.notes = {}
        self.torch = self.cupy = self.driver = None
        if device.type != "cuda":
            for name in ("torch", "cupy", "driver"):
                self.notes[name] = "peers measure CUDA; the device is the CPU backend"
            return
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
            else:
                self.notes["torch"] = "torch.cuda.is_available() is False"
        except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
            self.notes["torch"] = f"not importable ({type(e).__name__}: {e})"
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.cupy = cupy
        except Exception as e:  # noqa: BLE001
            self.notes["cupy"] = f"not usable ({type(e).__name__}: {e})"
        try:
            self.driver = Driver(device.index)
        except Exception as e:  # noqa: BLE001
            self.notes["driver"] = f"libcuda.so.1 not usable ({type(e).__name__}: {e})"

    def versions(self):
        v = {}
        if self.torch is not None:
            v["torch"] = self.torch.__version__
        if self.cupy is not None:
            v["cupy"] = self.cupy.__version__
        return v


class Driver:
    """The CUDA driver API through ctypes (no linking): the primary context of `index` made
    current on this thread, and the four allocation entry points."""

    def __init__(self, index):
        cu = ctypes.CDLL("libcuda.so.1")
        u64, sz, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
        self.alloc = cu.cuMemAlloc_v2
        self.alloc.argtypes, self.alloc.restype = [ctypes.POINTER(u64), sz], ctypes.c_int
        self.free = cu.cuMemFree_v2
        self.free.argtypes, self.free.restype = [u64], ctypes.c_int
        self.alloc_async = cu.cuMemAllocAsync
        self.alloc_async.argtypes = [ctypes.POINTER(u64), sz, vp]
        self.alloc_async.restype = ctypes.c_int
        self.free_async = cu.cuMemFreeAsync
        self.free_async.argtypes, self.free_async.restype = [u64, vp], ctypes.c_int
        self.sync = cu.cuCtxSynchronize
        self.sync.restype = ctypes.c_int
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self._check(cu.cuInit(0), "cuInit")
        self._check(cu.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
        self._check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self._check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUresult {rc}")

    def alloc_free_loop(self, nbytes, n):
        p = ctypes.c_uint64()
        pp, alloc, free = ctypes.byref(p), self.alloc, self.free
        err = 0
        for _ in range(n):
            err |= alloc(pp, nbytes)
            err |= free(p)
        self._check(err, "cuMemAlloc/cuMemFree")

    def alloc_free_async_loop(self, nbytes, n):
        p = ctypes.c_uint64()
        pp, alloc, free = ctypes.byref(p), self.alloc_async, self.free_async
        err = 0
        for _ in range(n):
            err |= alloc(pp, nbytes, None)
            err |= free(p, None)
        self._check(err | self.sync(), "cuMemAllocAsync/cuMemFreeAsync")


def _loop_ns(fn, iters, reps):
    """Median per-call host time in ns of `fn()` called `iters` times in a loop."""
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(max(iters // 10, 10)):
            fn()
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            for _ in range(iters):
                fn()
            samples.append((time.perf_counter_ns() - t0) / iters)
    finally:
        if gc_was:
            gc.enable()
    return statistics.median(samples)


def _batch_ns(loop, iters, reps):
    """Median per-call ns of `loop(n)`, which makes n calls itself (no per-call Python frame)."""
    loop(max(iters // 10, 10))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        loop(iters)
        samples.append((time.perf_counter_ns() - t0) / iters)
    return statistics.median(samples)


def _bandwidth(fn, nbytes, reps):
    """(GB/s from the median wall time of `fn()`, the last result). One warm-up call; the
    previous result is dropped before each timed call so that memory is reused, not grown."""
    res = fn()
    times = []
    for _ in range(reps):
        res = None
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9, res


def _fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.3g}{unit}" if abs(v) < 1000 else f"{v:.0f}{unit}"


def _table(title, rows, cols):
    """Prints `rows` (dicts) under `title`, columns (key, header) in `cols`."""
    print(f"\n== {title}")
    cells = [[h for _, h in cols]] + [[_fmt(r.get(k)) for k, _ in cols] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    for i, line in enumerate(cells):
        print(
            "  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(line, widths)))
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _ratio(peer, ours, higher_is_better):
    if peer is None or ours is None or ours == 0 or peer == 0:
        return None
    return ours / peer if higher_is_better else peer / ours
