"""GEMM autotuning: the switch (gp.set_gemm_autotune / PYGPUKIT_GEMM_AUTOTUNE), the cache report
(gp.gemm_tune_cache_info) and gp.clear_gemm_tune_cache on every device, then (GPU only) tuned
products against the float64 reference, the cache file the tuner writes, hits that replay the
cached choice bit for bit, and cache files that must be ignored: other versions, corrupt or
truncated text, an unwritable directory. Every test runs with its own cache directory and leaves
the switch as it found it."""

import concurrent.futures
import dataclasses
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from gemm_ref import HALF, TF32_ROUNDOFF, check_gemm, check_values, run_gemm, up
from helpers import host, rand
from test_gemm_cuda import ran, sm, sm90_built

import pygpukit as gp

INFO_KEYS = {
    "enabled",
    "device",
    "directory",
    "path",
    "loaded",
    "file_status",
    "entries",
    "hits",
    "misses",
    "tuned",
    "skipped_lines",
    "disk_usable",
    "disk_error",
}
CHOICE = re.compile(r"^(sm90:(128:1|256:1|256:2)|sm80|simt|cublaslt)$")
FAMILIES = {"sm90", "sm80", "simt", "cublaslt", "epilogue"}


@pytest.fixture
def tune_dir(monkeypatch, tmp_path):
    """A fresh cache directory, empty in-memory caches, and the switch restored afterwards."""
    d = tmp_path / "cache"
    monkeypatch.setenv("PYGPUKIT_CACHE_DIR", str(d))
    was = gp.gemm_autotune_enabled()
    gp.clear_gemm_tune_cache()
    yield d
    gp.set_gemm_autotune(was)
    gp.clear_gemm_tune_cache()


# ---- the API on every device ----


def test_switch_round_trip(tune_dir):
    gp.set_gemm_autotune(True)
    assert gp.gemm_autotune_enabled() is True
    assert gp.gemm_tune_cache_info()["enabled"] is True
    gp.set_gemm_autotune(False)
    assert gp.gemm_autotune_enabled() is False
    assert gp.gemm_tune_cache_info()["enabled"] is False
    gp.set_gemm_autotune(np.bool_(True))
    assert gp.gemm_autotune_enabled() is True
    gp.set_gemm_autotune(enabled=False)
    assert gp.gemm_autotune_enabled() is False


@pytest.mark.parametrize("bad", [1, 0, "yes", None, 1.0, [True], np.int64(1)])
def test_bad_argument_types_raise_type_error_naming_the_function(tune_dir, bad):
    was = gp.gemm_autotune_enabled()
    with pytest.raises(TypeError, match=r"set_gemm_autotune: enabled must be a bool, got "):
        gp.set_gemm_autotune(bad)
    assert gp.gemm_autotune_enabled() == was
    with pytest.raises(TypeError, match=r"clear_gemm_tune_cache: disk must be a bool, got "):
        gp.clear_gemm_tune_cache(bad)
    with pytest.raises(TypeError, match=r"clear_gemm_tune_cache: disk must be a bool"):
        gp.clear_gemm_tune_cache(disk=bad)


def _enabled_in_child(value):
    env = os.environ.copy()
    env.pop("PYGPUKIT_GEMM_AUTOTUNE", None)
    if value is not None:
        env["PYGPUKIT_GEMM_AUTOTUNE"] = value
    code = "import pygpukit as gp; print(gp.gemm_autotune_enabled())"
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), proc.stderr


@pytest.mark.parametrize(
    "value, enabled, warns",
    [(None, "False", False), ("1", "True", False), ("0", "False", False), ("maybe", "False", True)],
)
def test_environment_variable_sets_the_switch_at_start(value, enabled, warns):
    out, err = _enabled_in_child(value)
    assert out == enabled
    assert ("ignoring PYGPUKIT_GEMM_AUTOTUNE=maybe" in err) == warns, err


def test_info_fields(tune_dir, device):
    info = gp.gemm_tune_cache_info()
    assert set(info) == INFO_KEYS
    assert info["device"] == device
    assert info["directory"] == str(tune_dir)
    for key in ("entries", "hits", "misses", "tuned", "skipped_lines"):
        assert info[key] == 0, (key, info)
    assert info["loaded"] is False
    assert info["file_status"] == "not read"
    assert isinstance(info["disk_usable"], bool)
    assert isinstance(info["disk_error"], str)
    if device.type == "cuda":
        assert info["path"].startswith(str(tune_dir) + os.sep)
        assert re.fullmatch(r"gemm-tune-[A-Za-z0-9._-]+-sm\d+\.txt", os.path.basename(info["path"]))
    else:
        assert info["path"] is None
    assert gp.gemm_tune_cache_info(device=device)["device"] == device


def test_info_directory_follows_the_environment(tune_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("PYGPUKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gp.gemm_tune_cache_info()["directory"] == str(tmp_path / "xdg" / "pygpukit")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert gp.gemm_tune_cache_info()["directory"] == str(tmp_path / "home" / ".cache" / "pygpukit")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    info = gp.gemm_tune_cache_info()
    assert info["directory"] is None
    if info["device"].type == "cuda":
        assert info["path"] is None and info["disk_usable"] is False
        assert "PYGPUKIT_CACHE_DIR" in info["disk_error"]


def test_cpu_device_is_never_tuned(tune_dir, rng):
    # The CPU backend has one matmul kernel: the switch changes nothing there.
    gp.set_gemm_autotune(True)
    a, b = rand(rng, (65, 48), "float32", scale=1.0), rand(rng, (48, 33), "float32", scale=1.0)
    x = gp.matmul(gp.asarray(a, device="cpu"), gp.asarray(b, device="cpu"))
    check_gemm(x, a, b)
    info = gp.gemm_tune_cache_info("cpu")
    assert info["path"] is None and info["disk_usable"] is False
    assert (info["entries"], info["hits"], info["misses"], info["tuned"]) == (0, 0, 0, 0)
    assert not tune_dir.exists()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
def test_tuned_matmul_on_the_default_device_is_correct_and_repeatable(tune_dir, rng, device, dtype):
    gp.set_gemm_autotune(True)
    a, b = rand(rng, (130, 72), dtype, scale=1.0), rand(rng, (72, 96), dtype, scale=1.0)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    first = gp.matmul(ga, gb)
    check_gemm(first, a, b)
    assert host(gp.matmul(ga, gb)).tobytes() == host(first).tobytes()


def test_clear_is_harmless_everywhere(tune_dir):
    gp.clear_gemm_tune_cache()
    gp.clear_gemm_tune_cache(disk=True)
    gp.clear_gemm_tune_cache(True)
    info = gp.gemm_tune_cache_info()
    assert (info["entries"], info["hits"], info["misses"], info["tuned"]) == (0, 0, 0, 0)


# ---- tuning on a GPU ----


@pytest.fixture
def cuda(tune_dir, cuda):
    return cuda


M, K, N = 257, 136, 200  # tails in every dim; 16-byte aligned rows for every dtype


def candidates(device, dtype, precision, epi):
    """The configurations the tuner times (ops/gemm/cuda/gemm_autotune_cuda.h, TuneCandidates)."""
    major = sm(device)[0]
    tf32 = dtype == "float32" and precision == "tf32"
    c = []
    if major == 9 and sm90_built() and dtype in HALF:
        c += ["sm90:128:1", "sm90:256:1", "sm90:256:2"]
    if major >= 8 and (dtype in HALF or tf32):
        c.append("sm80")
    if dtype in ("float32", "float64") and not tf32 and epi != "out32":
        c.append("simt")
    if epi in ("plain", "out32"):  # cuBLASLt fuses bias + ReLU itself, not GELU's erf form
        c.append("cublaslt")
    return c


@dataclasses.dataclass
class Case:
    """One product: NumPy operands, the gemm epilogue (NumPy values) and the output dtype."""

    dtype: str
    precision: str
    epi: str  # "plain" (matmul), "fused" (C, alpha, beta, bias, gelu), "out32" (bias, relu)
    a: np.ndarray
    b: np.ndarray
    kw: dict
    out: str


def make_case(rng, dtype, epi="plain", precision="highest", m=M, k=K, n=N):
    a, b = rand(rng, (m, k), dtype, scale=1.0), rand(rng, (k, n), dtype, scale=1.0)
    out = "float32" if epi == "out32" else dtype
    s = np.sqrt(k)
    kw = {}
    if epi == "fused":
        kw = {"c": rand(rng, (m, n), out, scale=s), "alpha": 0.5, "beta": -1.0}
        kw |= {"bias": rand(rng, (n,), out, scale=s), "activation": "gelu"}
    elif epi == "out32":
        kw = {"bias": rand(rng, (n,), out, scale=s), "activation": "relu"}
    return Case(dtype, precision, epi, a, b, kw, out)


def checked(case, device):
    """Runs `case` on `device`, checks it against the reference; (NumPy result, families run)."""
    gp.synchronize(device)
    gp.reset_dispatch_stats()
    if case.epi == "plain":
        x = gp.matmul(up(case.a, device), up(case.b, device), precision=case.precision)
    else:
        od = case.out if case.out != case.dtype else None
        x = run_gemm(
            case.a, case.b, device=device, precision=case.precision, out_dtype=od, **case.kw
        )
    gp.synchronize(device)
    extra = 2 * TF32_ROUNDOFF if case.precision == "tf32" else 0.0
    check_gemm(x, case.a, case.b, dtype=case.dtype, out=case.out, extra=extra, **case.kw)
    return host(x), ran()


def read_cache(path):
    """(header line, {key: (choice, us)}) of a cache file, checking every line's form."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    assert text.endswith("\n")
    header, *lines = text[:-1].split("\n")
    entries = {}
    for line in lines:
        key, choice, us = line.split(" ")
        assert CHOICE.match(choice), line
        assert float(us) > 0, line
        entries[key] = (choice, float(us))
    return header, entries


def write_entries(path, header, entries):
    body = "".join(f"{k} {c} {us:.3f}\n" for k, (c, us) in entries.items())
    pathlib.Path(path).write_text(header + "\n" + body, encoding="utf-8")


def counters():
    i = gp.gemm_tune_cache_info()
    return i["hits"], i["misses"], i["tuned"], i["entries"]


def tune_once(rng, device):
    """Tunes a bfloat16 product; (its case, first result, cache path, header, entries)."""
    if len(candidates(device, "bfloat16", "highest", "plain")) < 2:
        pytest.skip(f"one bfloat16 kernel candidate on SM {sm(device)}: nothing to tune")
    gp.set_gemm_autotune(True)
    case = make_case(rng, "bfloat16")
    first, _ = checked(case, device)
    path = gp.gemm_tune_cache_info()["path"]
    header, entries = read_cache(path)
    assert len(entries) == 1, entries
    return case, first, path, header, entries


CASES = [
    ("bfloat16", "highest", "plain"),
    ("float16", "highest", "plain"),
    ("float32", "tf32", "plain"),
    ("float32", "highest", "plain"),
    ("float64", "highest", "plain"),
    ("bfloat16", "highest", "fused"),
    ("float16", "highest", "out32"),
    ("float32", "highest", "fused"),  # simt alone: nothing to choose, so never tuned
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, precision, epi", CASES)
def test_tuned_products_are_correct_cached_and_replayed(rng, cuda, dtype, precision, epi):
    gp.set_gemm_autotune(True)
    case = make_case(rng, dtype, epi, precision)
    cands = candidates(cuda, dtype, precision, epi)
    first, launched = checked(case, cuda)
    path = gp.gemm_tune_cache_info()["path"]
    if len(cands) < 2:
        assert counters() == (0, 0, 0, 0)
        assert not os.path.exists(path)
        return
    assert counters() == (0, 1, 1, 1)
    header, cached = read_cache(path)
    assert header.startswith("pygpukit-gemm-tune\tformat=2\t")
    props, info = gp.device_properties(cuda), gp.runtime_info()
    for field in (
        f"pygpukit={gp.__version__}",
        f"device={props['name']}",
        f"sm={props['sm']}",
        f"driver={props['driver_version']}",
        f"cublaslt={info['cublaslt_version']}",
        f"kernels={info['kernel_archs']}",
    ):
        assert f"\t{field}" in header, (field, header)
    [(key, (choice, _))] = cached.items()
    assert key == (
        f"in={dtype},out={case.out},tf32={int(precision == 'tf32')},m={M},n={N},k={K},batch=1,"
        f"a=k,b=n,fused={int(epi != 'plain')},align=16"
    )
    assert choice in cands, (choice, cands)
    assert choice.split(":")[0] in launched  # the winner also ran on the real operands

    again, launched = checked(case, cuda)
    assert counters() == (1, 1, 1, 1)
    assert again.tobytes() == first.tobytes()
    assert launched & FAMILIES == {choice.split(":")[0]}, launched  # no timing, no 2nd pass


@pytest.mark.gpu
def test_cache_file_is_read_back_after_clear(rng, cuda):
    case, first, path, _, _ = tune_once(rng, cuda)
    gp.clear_gemm_tune_cache()  # memory only: the next call reads the file
    info = gp.gemm_tune_cache_info()
    assert (info["loaded"], info["entries"], info["misses"]) == (False, 0, 0)
    again, _ = checked(case, cuda)
    assert gp.gemm_tune_cache_info()["file_status"] == "loaded"
    assert counters() == (1, 0, 0, 1)
    assert again.tobytes() == first.tobytes()
    gp.clear_gemm_tune_cache(disk=True)
    assert not os.path.exists(path)


@pytest.mark.gpu
def test_cached_choice_drives_dispatch(rng, cuda):
    case, _, path, header, entries = tune_once(rng, cuda)
    [key] = entries
    for choice in candidates(cuda, "bfloat16", "highest", "plain"):
        write_entries(path, header, {key: (choice, 1.0)})
        gp.clear_gemm_tune_cache()
        _, launched = checked(case, cuda)
        assert launched & FAMILIES == {choice.split(":")[0]}, (choice, launched)
        assert counters()[:3] == (1, 0, 0)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "field", ["format", "pygpukit", "device", "sm", "driver", "cublaslt", "kernels"]
)
def test_other_version_header_is_ignored(rng, cuda, field):
    case, _, path, header, entries = tune_once(rng, cuda)
    stale = re.sub(rf"\t{field}=[^\t]*", f"\t{field}=999", header, count=1)
    assert stale != header
    [key] = entries
    write_entries(path, stale, {key: ("cublaslt", 0.001)})
    gp.clear_gemm_tune_cache()
    checked(case, cuda)
    assert gp.gemm_tune_cache_info()["file_status"] == "version mismatch"
    assert counters()[:3] == (0, 1, 1)  # tuned afresh
    new_header, new_entries = read_cache(path)
    assert new_header == header and list(new_entries) == [key]  # rewritten for this setup


@pytest.mark.gpu
def test_corrupt_cache_files_do_not_break_matmul(rng, cuda):
    case, _, path, header, entries = tune_once(rng, cuda)
    [key] = entries
    bad_lines = f"not a line\n{key} sm90:64:1 1.0\n{key} sm91 1.0\n{key} cublaslt nan\n"
    variants = {
        "binary": (b"\x00\xff\xfe garbage \x7fELF" * 50, "not a cache file", 0),
        "bad lines": (f"{header}\n{bad_lines}{key[:40]} sm80 1\n".encode(), "loaded", 5),
        "truncated": (f"{header}\n{key} cublaslt 5.0".encode(), "loaded", 1),
        "header cut": (header[:25].encode(), "version mismatch", 0),
    }
    for name, (data, status, skipped) in variants.items():
        pathlib.Path(path).write_bytes(data)
        gp.clear_gemm_tune_cache()
        checked(case, cuda)
        info = gp.gemm_tune_cache_info()
        assert (info["file_status"], info["skipped_lines"]) == (status, skipped), (name, info)
        assert counters()[1:3] == (1, 1), (name, info)  # nothing trusted: tuned afresh
        read_cache(path)  # rewritten whole


@pytest.mark.gpu
def test_cached_choice_that_declines_falls_back_to_rules(rng, cuda):
    case, _, path, header, entries = tune_once(rng, cuda)
    [key] = entries
    write_entries(path, header, {key: ("simt", 1.0)})  # well-formed, but simt takes no bfloat16
    gp.clear_gemm_tune_cache()
    _, launched = checked(case, cuda)
    assert "simt" not in launched
    assert counters()[:3] == (1, 0, 0)


@pytest.mark.gpu
def test_unwritable_cache_directory_keeps_choices_in_memory(rng, cuda, monkeypatch, tmp_path):
    if len(candidates(cuda, "bfloat16", "highest", "plain")) < 2:
        pytest.skip("one bfloat16 kernel candidate on this GPU: nothing to tune")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("PYGPUKIT_CACHE_DIR", str(blocker / "sub"))
    gp.clear_gemm_tune_cache()
    gp.set_gemm_autotune(True)
    case = make_case(rng, "bfloat16")
    first, _ = checked(case, cuda)
    info = gp.gemm_tune_cache_info()
    assert info["disk_usable"] is False
    assert "cannot create" in info["disk_error"], info
    assert counters() == (0, 1, 1, 1)
    again, _ = checked(case, cuda)
    assert counters() == (1, 1, 1, 1)
    assert again.tobytes() == first.tobytes()


@pytest.mark.gpu
def test_threads_tune_concurrently(rng, cuda):
    gp.set_gemm_autotune(True)
    shapes = [(96, 64, 128), (200, 136, 72), (64, 256, 256)]
    cases = [make_case(rng, "float32", m=m, k=k, n=n) for m, k, n in shapes]

    def work(i):
        c = cases[i % len(cases)]
        return i, host(gp.matmul(up(c.a, cuda), up(c.b, cuda)))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(12)))
    for i, got in results:
        c = cases[i % len(cases)]
        check_values(got, c.a, c.b, dtype="float32", out="float32")
    info = gp.gemm_tune_cache_info()
    assert info["entries"] == len(shapes)
    assert info["hits"] + info["misses"] == 12
    assert len(read_cache(info["path"])[1]) == len(shapes)


@pytest.mark.gpu
def test_no_tuning_when_off_or_forced(rng, cuda):
    case = make_case(rng, "float32")
    gp.set_gemm_autotune(False)
    checked(case, cuda)
    gp.set_gemm_autotune(True)
    check_gemm(gp.matmul(up(case.a, cuda), up(case.b, cuda), backend="cublaslt"), case.a, case.b)
    info = gp.gemm_tune_cache_info()
    assert (info["hits"], info["misses"], info["entries"], info["loaded"]) == (0, 0, 0, False)
    assert not os.path.exists(info["path"])
