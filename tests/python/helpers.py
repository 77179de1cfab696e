"""Shared helpers of the Python tests: dtype lists, random data per dtype and comparisons
against NumPy (bfloat16 through ml_dtypes)."""

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np

import pygpukit as gp

BOOL = ["bool"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
INEXACT = FLOATS + COMPLEX
NUMERIC = INTS + INEXACT
ALL = BOOL + NUMERIC
# Dtypes NumPy knows natively (everything but bfloat16).
NATIVE = [d for d in ALL if d != "bfloat16"]

BF16 = np.dtype(ml_dtypes.bfloat16)
# The 8-bit floats (storage formats outside ALL: most tests iterate ALL).
FLOAT8 = ["float8_e4m3fn", "float8_e5m2"]

# Unit roundoff of each inexact dtype (of the real component for complex).
UNIT_ROUNDOFF = {
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
    "float32": 2.0**-24,
    "float64": 2.0**-53,
    "complex64": 2.0**-24,
    "complex128": 2.0**-53,
    "float8_e4m3fn": 2.0**-4,
    "float8_e5m2": 2.0**-3,
}


def npdt(name):
    """NumPy dtype of a pygpukit dtype name."""
    if name == "bfloat16" or name in FLOAT8:
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def gpdt(name):
    return getattr(gp, name)


def kind(name):
    if name == "bool":
        return "b"
    if name in SIGNED:
        return "i"
    if name in UNSIGNED:
        return "u"
    if name in FLOATS or name in FLOAT8:
        return "f"
    return "c"


def rand(rng, shape, name, *, small=False, nonzero=False, scale=None):
    """Random NumPy data of dtype `name`. Integers span the full range (small=True: |x| < 10);
    floats are normal with `scale`; `nonzero` replaces zeros by ones."""
    dt = npdt(name)
    k = kind(name)
    if k == "b":
        out = rng.random(shape) < 0.5
        if nonzero:
            out[...] = True
    elif k in "iu":
        info = np.iinfo(dt)
        lo, hi = (max(info.min, -9), 9) if small else (info.min, info.max)
        out = rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
    else:
        s = (3.0 if small else 8.0) if scale is None else scale
        re = rng.standard_normal(shape) * s
        if k == "c":
            out = (re + 1j * rng.standard_normal(shape) * s).astype(dt)
        else:
            out = re.astype(dt)
    out = np.asarray(out, dtype=dt)
    if nonzero and k != "b":
        out[out == 0] = 1
    return out


def cmp(a):
    """NumPy array in a dtype NumPy compares natively (bfloat16 -> float32)."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == BF16 else a


def host(x):
    """GPUArray -> NumPy (bfloat16 stays bfloat16 via ml_dtypes)."""
    out = gp.to_numpy(x)
    assert isinstance(out, np.ndarray)
    return out


def check_equal(x, expected, dtype=None):
    """GPUArray `x` equals NumPy `expected` exactly (NaN == NaN), with matching shape and dtype."""
    expected = np.asarray(expected)
    if dtype is None:
        dtype = "bfloat16" if expected.dtype == BF16 else expected.dtype.name
    assert isinstance(x, gp.GPUArray)
    assert str(x.dtype) == dtype, (x.dtype, dtype)
    assert x.shape == expected.shape, (x.shape, expected.shape)
    got = host(x)
    assert got.dtype == npdt(dtype)
    np.testing.assert_array_equal(cmp(got), cmp(expected.astype(npdt(dtype))), strict=True)


def check_close(x, expected, dtype, *, rtol, atol=0.0):
    """GPUArray `x` has dtype `dtype` and matches `expected` (any float dtype) within tolerance."""
    assert str(x.dtype) == dtype, (x.dtype, dtype)
    expected = np.asarray(expected)
    assert x.shape == expected.shape, (x.shape, expected.shape)
    got = cmp(host(x))
    wide = np.complex128 if kind(dtype) == "c" else np.float64
    np.testing.assert_allclose(
        got.astype(wide), cmp(expected).astype(wide), rtol=rtol, atol=atol, equal_nan=True
    )


def arr(data, device=None):
    """GPUArray of NumPy data (its dtype kept)."""
    return gp.asarray(np.asarray(data), device=device)


def round512(n):
    """Bytes the memory pool gives a request of `n` bytes (rounded to 512)."""
    return (max(n, 1) + 511) // 512 * 512


def fmt_bytes(b):
    """The pool's rendering of byte counts in messages ("4.00 MiB")."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):.2f} {unit}"
    return f"{b} bytes"


def settle(device=None):
    """Drops unreachable arrays and waits for queued work (which keeps its buffers alive)."""
    gc.collect()
    gp.synchronize(device)
    gc.collect()


def run_readme_example(heading):
    """Runs the first ```python block after `heading` in README.md (the documented example) and
    returns the globals it left."""
    text = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```\n", start)]
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the documented example
    return scope


def run_child(code, *, address_limit=True, timeout=60, env=None):
    """Runs `code` in a fresh interpreter (same environment, plus `env`), for cases that could
    crash or hang the test process. On the CPU backend the child's address space is capped at
    16 GiB, so a request that slipped through could never commit the machine's memory (the CUDA
    driver needs more address space, so no cap there)."""
    prologue = ""
    if address_limit and gp.default_device().type == "cpu":
        prologue = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**34, 2**34))\n"
    proc = subprocess.run(
        [sys.executable, "-c", prologue + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return proc


def run_bench(script, out, *args):
    """benchmarks/<script> in a child process on the CPU backend (--device cpu, one round of
    short batches, JSON into `out`): asserts it succeeded and returns its one JSON file, parsed."""
    import json

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, str(root / "benchmarks" / script), "--device", "cpu", "--reps", "1"]
    r = subprocess.run(
        [*cmd, "--batch-ms", "0.05", "--out", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = Path(out).glob("*.json")
    return json.loads(path.read_text())
