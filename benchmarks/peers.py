"""Peers measured beside pygpukit in the benchmark scripts: one library's way to make arrays on
the GPU, time a call with its own CUDA events and synchronize ("ours", "torch", "cupy")."""

import argparse
import platform
import statistics
import sys
import time

import numpy as np

import pygpukit as gp


class Lib:
    """One library's way to make arrays, run ops and time them on its own stream."""

    def __init__(self, name, dev):
        self.name = name
        self.dev = dev
        if name == "torch":
            import torch

            self.m = torch
        elif name == "cupy":
            import cupy

            self.m = cupy

    def array(self, host, dtype):
        if self.name == "ours":
            return gp.asarray(host, device=self.dev).astype(getattr(gp, dtype))
        if self.name == "torch":
            t = self.m.from_numpy(host).cuda()
            return t.to(getattr(self.m, dtype))
        return self.m.asarray(host).astype(dtype)

    def time_ms(self, call, iters):
        if self.name == "ours":
            s, e = gp.Event(self.dev), gp.Event(self.dev)
            s.record()
            for _ in range(iters):
                call()
            e.record()
            e.synchronize()
            return s.elapsed_time(e) / iters
        if self.name == "torch":
            s = self.m.cuda.Event(enable_timing=True)
            e = self.m.cuda.Event(enable_timing=True)
        else:
            s, e = self.m.cuda.Event(), self.m.cuda.Event()
        s.record()
        for _ in range(iters):
            call()
        e.record()
        e.synchronize()
        if self.name == "torch":
            return s.elapsed_time(e) / iters
        return self.m.cuda.get_elapsed_time(s, e) / iters

    def sync(self):
        if self.name == "ours":
            gp.synchronize(self.dev)
        elif self.name == "torch":
            self.m.cuda.synchronize()
        else:
            self.m.cuda.Device().synchronize()


def interleaved_ms(calls, iters, reps):
    """Times each library's call in rounds: every round runs one batch of `iters` back-to-back
    calls of each in turn, timed with that library's own events, so clock and power drift
    between rounds hit all alike (no library is timed in a block of its own). `calls` maps a
    name to (timer, warmed-up call): a Lib, or anything with time_ms(call, iters) and sync();
    `iters` is one count for all or a count per name. Returns name -> {"ms": median per call,
    "spread": max / min batch over the rounds}, or {"error": message} for a call that raised
    (dropped from later rounds)."""
    samples = {name: [] for name in calls}
    errors = {}
    for _ in range(reps):
        for name, (lib, call) in calls.items():
            if name in errors:
                continue
            n = iters[name] if isinstance(iters, dict) else iters
            try:
                samples[name].append(lib.time_ms(call, n))
            except Exception as e:  # noqa: BLE001 - one library's failure must not end the run
                errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                lib.sync()
    out = {}
    for name, v in samples.items():
        if name in errors:
            out[name] = {"error": errors[name]}
        else:
            out[name] = {"ms": statistics.median(v), "spread": max(v) / min(v)}
    return out


def cuda_torch():
    """torch when it is importable and sees a CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def load(dev):
    """Lib objects for ours and every peer importable here, and their versions."""
    libs = [Lib("ours", dev)]
    versions = {"pygpukit": gp.__version__}
    for name in ("torch", "cupy"):
        try:
            libs.append(Lib(name, dev))
            versions[name] = libs[-1].m.__version__
        except ImportError:
            pass
    return libs, versions


def start(doc, iters, add_arguments=None):
    """The bandwidth scripts' common start: parses --log2n / --iters / --reps / --out / --device
    (and what add_arguments(parser) adds), exits without a CUDA device unless --device cpu asks
    for a smoke run of ours alone, and returns (args, device, its properties, libs, versions)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--log2n", type=int, default=28)
    p.add_argument("--iters", type=int, default=iters)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results)")
    p.add_argument("--device", default="cuda:0", help="'cpu': a smoke run of ours alone")
    if add_arguments is not None:
        add_arguments(p)
    args = p.parse_args()
    dev = gp.Device(args.device)
    if dev.type == "cpu":
        libs, versions = [Lib("ours", dev)], {"pygpukit": gp.__version__}
    else:
        info = gp.runtime_info()
        if not info["cuda_available"]:
            sys.exit(f"needs a CUDA device: {info['cuda_status']}")
        libs, versions = load(dev)
    versions["numpy"] = np.__version__
    return args, dev, gp.device_properties(dev), libs, versions


def header(props, versions, args):
    """The JSON fields every bandwidth result starts with."""
    return {
        "gpu": props["name"],
        "sm": props["sm"],
        "driver": props["driver_version"],
        "python": platform.python_version(),
        "versions": versions,
        "iters": args.iters,
        "reps": args.reps,
    }


def open_gemm_device(args, script):
    """The product scripts' common start (gemm_epilogue.py, scaled_matmul.py, mlp.py): the device
    of --device (default: the default device; the CPU only when asked for, as a smoke run without
    torch), torch beside it unless --no-torch, and its properties; None after saying why when
    there is no CUDA device and no --device."""
    dev = gp.Device(args.device) if args.device else gp.default_device()
    cpu = dev.type == "cpu"
    if cpu and args.device is None:
        print(f"{script}: no CUDA device (pass --device cpu for a smoke run)", file=sys.stderr)
        return None
    torch = None if cpu or args.no_torch else cuda_torch()
    props = gp.device_properties(dev)
    print(
        f"pygpukit {gp.__version__} on {dev} ({props['name']}); torch "
        f"{torch.__version__ if torch else 'no'}",
        flush=True,
    )
    return dev, torch, props


def product_result(props, dev, torch, timing, settings, results):
    """The JSON of a product script's run: device, versions, how it was timed, its settings and
    its rows."""
    return {
        "gpu": props["name"],
        "sm": props["sm"],
        "device": str(dev),
        "versions": {
            "pygpukit": gp.__version__,
            "torch": torch.__version__ if torch else None,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "timing": timing,
        "settings": settings,
        "results": results,
    }


INTERLEAVED = (
    "interleaved rounds: one batch of back-to-back calls of every candidate in turn between "
    "device events; median per call; spread = max / min batch over rounds"
)


def host_us_per_call(fn, iters, reps, warmup=0, sync=None):
    """Host wall time per call of `iters` back-to-back calls of fn, in us: the median of `reps`
    loops, after `warmup` untimed calls. `sync`, when given, runs before each loop and inside its
    timing at the end, so work a library still holds queued on the host (or the GPU has not run)
    is paid for by the loop that queued it."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        if sync is not None:
            sync()
        t = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        if sync is not None:
            sync()
        out.append((time.perf_counter_ns() - t) / iters / 1e3)
    return statistics.median(out)
