"""gp.random: the Philox stream against NumPy's, the transforms, statistics on fixed seeds,
reproducibility, CPU / CUDA bit equality and bad input."""

import math
import threading

import numpy as np
import pytest
from helpers import BF16, FLOATS, INTS, host, npdt, run_readme_example

import pygpukit as gp

M64 = (1 << 64) - 1
KEYS = [0, 1, 123, (7 << 64) + 5, (1 << 128) - 1]


def np_raw(key, counter, n):
    return np.random.Philox(key=key, counter=counter).random_raw(n)


def blocks(n, per=4):
    return -(-n // per)


# ---- the raw stream and NumPy equivalence ----


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("counter", [0, 5, M64, (M64 << 64) | M64, (1 << 256) - 2])
def test_raw_matches_numpy(key, counter, device):
    g = gp.random.Generator(key, device=device)
    g.counter = counter
    assert g.key == key and g.counter == counter
    pos = counter
    for n in (1, 3, 4, 7, 1001):  # consecutive calls: each starts at a new block
        got = host(g.random_raw(n))
        assert got.dtype == np.uint64 and got.shape == (n,)
        np.testing.assert_array_equal(got, np_raw(key, pos, n))
        pos = (pos + blocks(n)) % (1 << 256)
        assert g.counter == pos


def test_raw_shapes(device):
    g = gp.random.Generator(9, device=device)
    x = g.random_raw((3, 5))
    assert x.shape == (3, 5)
    np.testing.assert_array_equal(host(x).ravel(), np_raw(9, 0, 15))
    assert g.random_raw().shape == ()  # size None: a 0-d array
    assert g.random_raw(0).shape == (0,) and g.counter == 5  # empty requests take no block


@pytest.mark.parametrize("key", [0, 42, 2**100 + 3])
@pytest.mark.parametrize("n", [1, 5, 8, 1000, 4099])
def test_random_matches_numpy(key, n, device):
    for dt in (np.float64, np.float32):
        want = np.random.Generator(np.random.Philox(key=key)).random(n, dtype=dt)
        got = host(gp.random.Generator(key).random(n, dtype=dt, device=device))
        assert got.dtype == dt
        np.testing.assert_array_equal(got, want)


def test_uniform_matches_numpy(device):
    for low, high in [(0.0, 1.0), (-3.5, 7.25), (1e10, 1e10 + 1), (2.0, 2.0)]:
        want = np.random.Generator(np.random.Philox(key=11)).uniform(low, high, 1003)
        got = host(gp.random.Generator(11).uniform(low, high, 1003, device=device))
        np.testing.assert_array_equal(got, want)
    # float32: the float32 stream mapped in float64 and rounded once.
    u = np.random.Generator(np.random.Philox(key=11)).random(77, dtype=np.float32)
    want = (-2.0 + 5.0 * u.astype(np.float64)).astype(np.float32)
    got = host(gp.random.Generator(11).uniform(-2, 3, 77, dtype=gp.float32, device=device))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,bits", [("float16", 11), ("bfloat16", 8)])
def test_half_uniform_is_truncated_float32(name, bits, device):
    u32 = np.random.Generator(np.random.Philox(key=3)).random(40001, dtype=np.float32)
    want = np.floor(u32.astype(np.float64) * 2.0**bits) / 2.0**bits
    got = host(gp.random.Generator(3).random(40001, dtype=getattr(gp, name), device=device))
    assert got.dtype == npdt(name)
    np.testing.assert_array_equal(got.astype(np.float64), want)
    assert got.max() < 1.0 and len(np.unique(got)) == 2**bits  # every step, never 1.0


def test_integers_definition(device):
    # low + (word * range) >> 64, one word per value, against Python integers.
    raw = [int(w) for w in np_raw(5, 0, 999)]
    for low, high in [(0, 10), (-7, 13), (-(2**62), 2**62 + 12345), (3, 4)]:
        want = np.array([low + ((w * (high - low)) >> 64) for w in raw], dtype=np.int64)
        got = host(gp.random.Generator(5).integers(low, high, 999, device=device))
        np.testing.assert_array_equal(got, want)
    # Whole ranges are the raw words (two's complement for int64).
    full = host(gp.random.Generator(5).integers(0, 2**64, 999, dtype=gp.uint64, device=device))
    np.testing.assert_array_equal(full, np_raw(5, 0, 999))
    signed = gp.random.Generator(5).integers(-(2**63), 2**63 - 1, 999, endpoint=True, device=device)
    want = (np_raw(5, 0, 999) - np.uint64(2**63)).view(np.int64)
    np.testing.assert_array_equal(host(signed), want)


def test_normal_against_numpy_math(device):
    # Box-Muller from the raw words with NumPy's log / sqrt / sin / cos. Our log, sin and cos
    # are within 1.5 ulp (tests/cpp/random_test.cc); NumPy's angle 2 pi t / 2^53 is rounded
    # once more, so compare within a few units of 2^-52 of the radius.
    n = 20000
    w = np_raw(77, 0, n)
    u1 = ((w[0::2] >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0**-53
    angle = 2 * np.pi * ((w[1::2] >> np.uint64(11)).astype(np.float64) * 2.0**-53)
    radius = np.sqrt(-2.0 * np.log(u1))
    want = np.empty(n)
    want[0::2] = radius * np.cos(angle)
    want[1::2] = radius * np.sin(angle)
    got = host(gp.random.Generator(77).normal(size=n, device=device))
    err = np.abs(got - want) / np.repeat(np.maximum(radius, 1e-300), 2)
    assert err.max() < 16 * 2.0**-52, err.max()
    loc, scale = 3.0, 0.25
    shifted = host(gp.random.Generator(77).normal(loc, scale, n, device=device))
    np.testing.assert_array_equal(shifted, loc + scale * got)  # one rounding per operation
    f32 = host(gp.random.Generator(77).normal(loc, scale, n, dtype=gp.float32, device=device))
    np.testing.assert_array_equal(f32, (loc + scale * got).astype(np.float32))


# ---- reproducibility ----


def test_reproducible(device):
    a, b = gp.random.Generator(2024, device=device), gp.random.default_rng(2024, device=device)
    for draw in ("random", "normal", "random_raw"):
        x, y = getattr(a, draw)(100), getattr(b, draw)(100)
        np.testing.assert_array_equal(host(x), host(y))
    first = host(a.integers(0, 1000, 50))
    assert not np.array_equal(first, host(a.integers(0, 1000, 50)))  # consecutive calls differ
    c = gp.random.Generator(2025, device=device)
    assert not np.array_equal(host(c.random(100)), host(gp.random.Generator(2024).random(100)))
    assert gp.random.default_rng(a) is a
    # Unseeded generators get distinct OS keys.
    assert gp.random.Generator().key != gp.random.Generator().key


def test_module_functions(device):
    gp.random.seed(31)
    x = [
        host(gp.random.random(10, device=device)),
        host(gp.random.uniform(1, 2, 10, device=device)),
        host(gp.random.normal(0, 1, 10, device=device)),
        host(gp.random.integers(0, 9, 10, device=device)),
        host(gp.random.permutation(10, device=device)),
    ]
    g = gp.random.Generator(31, device=device)
    y = [
        host(g.random(10)),
        host(g.uniform(1, 2, 10)),
        host(g.normal(0, 1, 10)),
        host(g.integers(0, 9, 10)),
        host(g.permutation(10)),
    ]
    for a, b in zip(x, y):
        np.testing.assert_array_equal(a, b)
    gp.random.seed(31)
    again = host(gp.random.random(10, device=device))
    np.testing.assert_array_equal(again, host(gp.random.Generator(31).random(10)))


def test_devices_and_size(device):
    g = gp.random.Generator(1, device="cpu")
    assert g.random(3).device == gp.Device("cpu")
    assert g.random(3, device=device).device == device
    assert gp.random.Generator(1).random(2).device == gp.default_device()
    assert g.normal(size=(2, 0, 3)).shape == (2, 0, 3)
    assert g.integers(5).shape == () and g.integers(5).dtype == gp.int64
    assert g.random().dtype == gp.float64


def test_concurrent_calls_take_disjoint_blocks():
    g = gp.random.Generator(8, device="cpu")
    out, lock = [], threading.Lock()

    def work():
        for _ in range(20):
            x = host(g.random_raw(400))
            with lock:
                out.append(x)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert g.counter == 6 * 20 * 100
    np.testing.assert_array_equal(np.sort(np.concatenate(out)), np.sort(np_raw(8, 0, 48000)))


# ---- statistics (fixed seeds: deterministic) ----


def chi2_ok(counts, probs, n):
    expected = n * np.asarray(probs)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    dof = len(counts) - 1
    return chi2 < dof + 5 * math.sqrt(2 * dof), chi2  # about 5 sigma


@pytest.mark.parametrize("name", FLOATS)
def test_uniform_statistics(name, device):
    n = 400_000
    x = host(gp.random.Generator(100).random(n, dtype=getattr(gp, name), device=device))
    x = x.astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n) + 2.0**-9  # half types: steps
    bins = 64 if name != "bfloat16" else 32
    counts = np.histogram(x, bins=bins, range=(0.0, 1.0))[0]
    ok, chi2 = chi2_ok(counts, [1 / bins] * bins, n)
    assert ok, chi2


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_normal_statistics(name, device):
    n = 400_000
    x = host(gp.random.Generator(7).normal(2.0, 3.0, n, dtype=getattr(gp, name), device=device))
    z = (x.astype(np.float64) - 2.0) / 3.0
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.std() - 1.0) < 5 / math.sqrt(2 * n)
    edges = np.concatenate([[-np.inf], np.linspace(-4, 4, 41), [np.inf]])
    cdf = np.array([0.5 * (1 + math.erf(e / math.sqrt(2))) for e in edges])
    counts = np.histogram(z, bins=edges)[0]
    ok, chi2 = chi2_ok(counts, np.diff(cdf), n)
    assert ok, chi2
    # Tails: |z| > 4 has probability 6.3e-5.
    assert 0 < np.count_nonzero(np.abs(z) > 4) < 3 * 6.3e-5 * n


@pytest.mark.parametrize("name", ["bool"] + INTS)
def test_integers_bounds_and_coverage(name, device):
    dt = getattr(gp, name)
    info = np.iinfo(npdt(name)) if name != "bool" else None
    lo, hi = (0, 1) if name == "bool" else (int(info.min), int(info.max))
    g = gp.random.Generator(55, device=device)
    # Small ranges: every value, within bounds, chi-square uniform.
    for a, b, endpoint in [(lo, lo + 1, True), (hi - 1, hi, True), (lo, lo + 1, False)]:
        x = host(g.integers(a, b, 3000, dtype=dt, endpoint=endpoint)).astype(object)
        values = set(range(a, b + 1 if endpoint else b))
        assert set(x.tolist()) == values
    if name != "bool":
        a, b = max(lo, -3), min(hi, 20)
        x = host(g.integers(a, b, 60_000, dtype=dt, endpoint=True)).astype(np.int64)
        counts = np.bincount(x - a, minlength=b - a + 1)
        ok, chi2 = chi2_ok(counts, [1 / (b - a + 1)] * (b - a + 1), len(x))
        assert ok, chi2
    # The dtype's whole range.
    x = host(g.integers(lo, hi, 5000, dtype=dt, endpoint=True))
    assert x.dtype == npdt(name)
    assert int(x.min()) < lo + (hi - lo) // 8 + 1 and int(x.max()) > hi - (hi - lo) // 8 - 1
    x = host(g.integers(lo, hi, 5000, dtype=dt))  # exclusive: hi never appears
    assert int(x.max()) < hi


def test_permutation(device):
    g = gp.random.Generator(4, device=device)
    for n in (0, 1, 2, 7, 1000):
        p = host(g.permutation(n))
        assert p.dtype == np.int64
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(host(g.permutation(1000)), np.arange(1000))
    x = np.arange(60, dtype=np.float32).reshape(20, 3)
    order = host(gp.random.Generator(4).permutation(20))
    got = gp.random.Generator(4).permutation(gp.asarray(x, device=device))
    assert got.device == device
    np.testing.assert_array_equal(host(got), x[order])  # rows moved whole
    from_list = gp.random.Generator(4, device=device).permutation(x.tolist())
    np.testing.assert_array_equal(host(from_list), x[order])
    np.testing.assert_array_equal(host(gp.random.Generator(4).permutation(np.int64(20))), order)
    cpu = gp.Device("cpu")
    moved = gp.random.Generator(4).permutation(gp.asarray(x, device=device), device=cpu)
    assert moved.device == cpu  # device= moves the shuffled copy
    np.testing.assert_array_equal(host(moved), x[order])


# ---- CPU / CUDA bit equality ----


def test_cpu_and_cuda_give_the_same_bits(cuda):
    def draws(device):
        g = gp.random.Generator(2**90 + 17, device=device)
        g.counter = M64 - 3  # carries across a word within the calls
        out = [g.random_raw(1001)]
        for name in FLOATS:
            dt = getattr(gp, name)
            out += [g.random(1003, dtype=dt), g.uniform(-2.5, 4.0, 999, dtype=dt)]
            out += [g.normal(0.5, 3.0, 1001, dtype=dt), g.normal(size=(7, 9), dtype=dt)]
        for name in ["bool"] + INTS:
            low, high = {"b": (0, 2), "i": (-3, 100), "u": (0, 100)}[name[0]]
            out.append(g.integers(low, high, 1002, dtype=getattr(gp, name)))
        out += [g.integers(-(2**63), 2**63, 500, endpoint=False), g.permutation(3000)]
        out.append(g.permutation(gp.arange(40, device=device).reshape(10, 4)))
        return out, g.counter

    on_cpu, c1 = draws("cpu")
    on_gpu, c2 = draws(cuda)
    assert c1 == c2
    for a, b in zip(on_cpu, on_gpu):
        assert b.device == cuda
        ha, hb = host(a), host(b)
        assert ha.dtype == hb.dtype and ha.shape == hb.shape
        np.testing.assert_array_equal(ha.view(f"u{ha.itemsize}"), hb.view(f"u{hb.itemsize}"))


# ---- bad input ----


@pytest.mark.parametrize(
    "seed,exc,match",
    [
        (-1, ValueError, r"Generator: seed must be in \[0, 2\*\*128\), got -1"),
        (2**128, ValueError, "seed must be in"),
        (1.5, TypeError, "Generator: seed must be an integer, got float"),
        (True, TypeError, "got bool"),
        ("7", TypeError, "got str"),
    ],
)
def test_bad_seed(seed, exc, match):
    with pytest.raises(exc, match=match):
        gp.random.Generator(seed)
    with pytest.raises(exc, match=match):
        gp.random.seed(seed)


def test_bad_arguments(device):
    g = gp.random.Generator(0, device=device)
    cases = [
        (lambda: g.random(3, dtype=gp.int32), TypeError, "random: unsupported dtype int32"),
        (lambda: g.uniform(size=3, dtype=gp.complex64), TypeError, "uniform: unsupported dtype"),
        (lambda: g.normal(size=3, dtype=gp.bool), TypeError, "normal: unsupported dtype bool"),
        (lambda: g.integers(0, 5, dtype=gp.float32), TypeError, "integers: unsupported dtype"),
        (lambda: g.integers(5, 5), ValueError, r"integers: low >= high \(low=5, high=5\)"),
        (lambda: g.integers(5, 4, endpoint=True), ValueError, "integers: low > high"),
        (lambda: g.integers(0, 4, endpoint=1), TypeError, "integers: endpoint must be a bool"),
        (lambda: g.integers(0), ValueError, "low >= high"),
        (
            lambda: g.integers(-1, 5, dtype=gp.uint8),
            ValueError,
            "low -1 is out of bounds for uint8 ",
        ),
        (lambda: g.integers(0, 257, dtype=gp.uint8), ValueError, "high 257 is out of bounds"),
        (lambda: g.integers(0, 256, dtype=gp.uint8, endpoint=True), ValueError, "out of bounds"),
        (lambda: g.integers(0, 3, dtype=gp.bool), ValueError, "high 3 is out of bounds for bool"),
        (lambda: g.integers(0, 10**40), ValueError, "high 1000000000000000000000000000000000000"),
        (  # bounds past 64 bits are printed exactly
            lambda: g.integers(0, 2**70, dtype=gp.uint64),
            ValueError,
            r"high 1180591620717411303424 is out of bounds for uint64 \(at most "
            r"18446744073709551616, exclusive\)",
        ),
        (
            lambda: g.integers(-(2**70), 0),
            ValueError,
            r"low -1180591620717411303424 is out of bounds for int64 \(at least "
            r"-9223372036854775808\)",
        ),
        (lambda: g.integers(1.5), TypeError, "integers: high must be an integer, got float"),
        (lambda: g.random(-1), ValueError, "random: negative dimension"),
        (lambda: g.normal(0, 1, (2, -3)), ValueError, "normal: negative dimension"),
        (lambda: g.normal(0, -1.0), ValueError, r"normal: scale < 0 \(got -1\)"),
        (lambda: g.normal(0, -0.0), ValueError, "scale < 0"),
        (lambda: g.normal(1j), TypeError, "normal: loc must be a real number"),
        (lambda: g.uniform(0, np.inf), OverflowError, "uniform: high - low is not finite"),
        (lambda: g.uniform(-1e308, 1e308), OverflowError, "not finite"),
        (lambda: g.uniform(5, -2), ValueError, r"uniform: high < low \(low=5, high=-2\)"),
        (lambda: g.permutation(-1), ValueError, "permutation: n must be non-negative, got -1"),
        (lambda: g.permutation(gp.asarray(3.0)), ValueError, "at least one dimension"),
        (lambda: g.random(3, device="tpu"), ValueError, "random"),
    ]
    for fn, exc, match in cases:
        with pytest.raises(exc, match=match):
            fn()
    for bad in (-1, 2**256, 0.5):
        with pytest.raises((ValueError, TypeError), match="counter"):
            g.counter = bad
    assert g.counter == 0  # nothing above took a block
    assert np.isnan(host(g.normal(0.0, np.nan, 3))).all()  # NaN passes, as in NumPy


def test_readme_example():
    scope = run_readme_example("### Random numbers")
    assert scope["x"].shape == (2, 3)


def test_bfloat16_host_values(device):
    x = host(gp.random.Generator(1).uniform(-4, 4, 1000, dtype=gp.bfloat16, device=device))
    assert x.dtype == BF16
    f = x.astype(np.float32)
    assert f.min() >= -4 and f.max() <= 4 and len(np.unique(f)) > 100
