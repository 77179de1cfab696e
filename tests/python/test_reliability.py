"""Crashes, hangs, wrong results and isolation holes a bad-input probe found (issue 31), one
test each; cases that could crash or hang the interpreter run in a child process."""

import json
import textwrap

import numpy as np
import pytest
from helpers import run_child

import pygpukit as gp

# Every pybind11 class of the extension module and its submodules (also run in children).
_WALK = """
import inspect


def bound_classes(root):
    seen, out = set(), []

    def walk(mod):
        for name in dir(mod):
            o = getattr(mod, name)
            if inspect.ismodule(o) and o.__name__.startswith(root.__name__) and o not in seen:
                seen.add(o)
                walk(o)
            elif isinstance(o, type) and type(o).__name__ == "pybind11_type" and o not in out:
                out.append(o)

    walk(root)
    return out
"""
exec(_WALK)


def test_every_bound_class_is_found():
    names = {c.__name__ for c in bound_classes(gp._core)}  # noqa: F821 - defined by _WALK
    assert {"GPUArray", "Event", "Stream", "Scheduler", "Task", "Quota", "Records"} <= names


# ---- objects made without __init__ ----


def test_uninitialized_objects_raise_type_error():
    # Every method and property of every bound class, on an object made with __new__ alone, with
    # a few argument shapes: TypeError naming the class, never a crash or a garbage value.
    proc = run_child(
        _WALK
        + textwrap.dedent(
            """
        import json
        import pygpukit as gp
        classes = bound_classes(gp._core)
        skip = {"__new__", "__init__", "__class__", "__init_subclass__", "__subclasshook__",
                "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__reduce_ex__",
                "__reduce__", "__format__", "__sizeof__", "__getstate__", "__hash__", "__eq__",
                "__ne__"}
        checked, wrong = 0, []
        for c in classes:
            for attr in sorted(set(dir(c)) - skip):
                o = c.__new__(c)
                calls = [lambda: getattr(o, attr)]
                if callable(getattr(c, attr, None)):
                    calls = [lambda a=a: getattr(o, attr)(*a)
                             for a in [(), (1,), (o,), (gp.ones((2,)),), ("x", 2)]]
                for call in calls:
                    try:
                        call()
                    except TypeError as e:
                        if "not initialized" in str(e) and c.__name__ not in str(e):
                            wrong.append(f"{c.__name__}.{attr}: {e}")
                    except Exception as e:
                        wrong.append(f"{c.__name__}.{attr}: {type(e).__name__}: {e}")
                    checked += 1
        # Used as arguments of other functions too.
        y = gp.GPUArray.__new__(gp.GPUArray)
        for f in [lambda: gp.ones((3,)) + y, lambda: gp.sum(y), lambda: y + 1,
                  lambda: gp.matmul(y, y), lambda: gp.asarray(y)]:
            try:
                f()
                wrong.append("accepted an uninitialized array")
            except TypeError as e:
                if "GPUArray object is not initialized" not in str(e):
                    wrong.append(str(e))
        print(json.dumps({"checked": checked, "wrong": wrong}))
        """
        )
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["checked"] > 500
    assert result["wrong"] == []


@pytest.mark.parametrize("name", ["GPUArray", "Event", "Stream"])
def test_uninitialized_object_message(name):
    obj = getattr(gp, name).__new__(getattr(gp, name))
    with pytest.raises(TypeError, match=f"{name} object is not initialized"):
        if name == "GPUArray":
            obj.shape  # noqa: B018 - the property is the use
        elif name == "Event":
            obj.record()
        else:
            with obj:
                pass


# ---- the host JIT's disk cache ----


@pytest.mark.parametrize("damage", ["truncate", "empty", "random", "foreign", "flip"])
def test_damaged_host_jit_entries_are_recompiled(tmp_path, damage):
    if gp.default_device().type != "cpu":
        pytest.skip("the host compiler serves the CPU backend")
    # The first child fills the cache; the entry is damaged; a second child must neither crash
    # (a truncated shared object killed it with SIGBUS) nor load the damaged bytes.
    code = """
        import json, numpy as np, pygpukit as gp
        x = gp.asarray(np.arange(5, dtype=np.float32))
        a = gp.ElementwiseKernel("T x", "T y", "y = x*3;", "k")(x).get().tolist()
        b = gp.ElementwiseKernel("T x", "T y", "y = x+4;", "other")(x).get().tolist()
        print(json.dumps([a, b, gp.jit.cache_info()]))
    """
    env = {"PYGPUKIT_CACHE_DIR": str(tmp_path)}
    first = run_child(code, env=env)
    assert first.returncode == 0, first.stderr
    entries = sorted((tmp_path / "host").glob("k-*.bin"), key=lambda p: p.stat().st_mtime_ns)
    assert len(entries) == 2
    target, other = entries
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        target.write_bytes(b"")
    elif damage == "random":
        target.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif damage == "foreign":
        target.write_bytes(other.read_bytes())  # another source's intact entry
    else:
        flipped = bytearray(data)
        flipped[len(data) * 3 // 4] ^= 0x40  # one bit inside the shared object
        target.write_bytes(bytes(flipped))
    second = run_child(code, env=env)
    assert second.returncode == 0, second.stderr
    a, b, info = json.loads(second.stdout.strip().splitlines()[-1])
    assert a == [0.0, 3.0, 6.0, 9.0, 12.0] and b == [4.0, 5.0, 6.0, 7.0, 8.0]
    assert info["host_rejected_entries"] == 1
    assert info["host_compiles"] == 1 and info["host_disk_hits"] == 1
    # The entry was replaced by an intact one: a third run loads both from disk.
    third = run_child(code, env=env)
    info = json.loads(third.stdout.strip().splitlines()[-1])[2]
    assert (info["host_compiles"], info["host_disk_hits"], info["host_rejected_entries"]) == (
        0,
        2,
        0,
    )
