"""Random numbers from a seeded, counter-based generator (Philox4x64-10).

    import pygpukit as gp
    rng = gp.random.default_rng(42)
    x = rng.random((2, 3))                    # float64 in [0, 1)
    z = rng.normal(0.0, 2.0, 1000, dtype=gp.float32)
    k = rng.integers(0, 10, size=5)           # int64 in [0, 10)
    p = rng.permutation(8)

Every output is a pure function of (seed, position in the stream), computed by the same code on
the CPU backend and on CUDA devices, so a seed gives the same numbers on every device. Each call
takes whole 4-word Philox blocks and advances the generator past them.

NumPy equivalence: the raw stream of ``Generator(seed)`` is ``np.random.Philox(key=seed)``'s
(``random_raw``), and ``random`` (float64, float32) and ``uniform`` (float64) give the numbers of
``np.random.Generator(np.random.Philox(key=seed))`` for a call that starts at a block boundary
(NumPy keeps the rest of a block for the next call; here the next call starts a new block).
``normal`` (Box-Muller), ``integers`` (multiply-high, no rejection) and ``permutation``
(argsort of random words) are our own.
"""

import operator as _operator
import threading as _threading

from . import _core

_r = _core._random

__all__ = [
    "Generator",
    "default_rng",
    "integers",
    "normal",
    "permutation",
    "random",
    "seed",
    "uniform",
]


class Generator:
    """A random generator: Philox4x64-10 with key ``seed`` (an int in [0, 2**128), the key
    NumPy's ``np.random.Philox(key=seed)`` takes), or 128 bits from the OS when seed is None.
    ``device`` is where its arrays go unless a call names one (default: the default device).
    Calls from several threads get disjoint parts of the stream, in no defined order."""

    __slots__ = ("_bit_generator", "_device")

    def __init__(self, seed=None, *, device=None):
        self._bit_generator = _r.Philox(seed)
        self._device = None if device is None else _core._parse_device(device, "Generator")

    def __repr__(self):
        return f"Generator(Philox, key={self.key:#x}, counter={self.counter})"

    @property
    def key(self):
        """The Philox key (an int below 2**128)."""
        return self._bit_generator.key

    @property
    def counter(self):
        """The 256-bit block counter, as NumPy's Philox state holds it (settable)."""
        return self._bit_generator.counter

    @counter.setter
    def counter(self, value):
        self._bit_generator.counter = value

    def _on(self, device):
        return self._device if device is None else device

    def random_raw(self, size=None, *, device=None):
        """The raw 64-bit words (uint64): NumPy's ``Philox.random_raw``."""
        return _r.random_raw(self._bit_generator, size, self._on(device))

    def random(self, size=None, dtype=_core.float64, *, device=None):
        """Floats in [0, 1): float64 ``(word >> 11) * 2**-53``, float32 ``(half >> 8) * 2**-24``
        (NumPy's); float16 / bfloat16 keep the top 11 / 8 bits of that half. size None: a 0-d
        array."""
        return _r.random(self._bit_generator, size, dtype, self._on(device))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=_core.float64, *, device=None):
        """``low + (high - low) * random()`` computed in float64 and rounded to dtype (which
        may round up to ``high``, as in NumPy)."""
        return _r.uniform(self._bit_generator, low, high, size, dtype, self._on(device))

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=_core.float64, *, device=None):
        """``loc + scale * z``, z standard normal (Box-Muller in float64, rounded to dtype)."""
        return _r.normal(self._bit_generator, loc, scale, size, dtype, self._on(device))

    def integers(
        self, low, high=None, size=None, dtype=_core.int64, endpoint=False, *, device=None
    ):
        """Integers in [low, high) ([low, high] with endpoint=True; [0, low) without high), of
        a bool or integer dtype. One 64-bit word per value, mapped by multiply-high: a value's
        probability is off by at most (high - low) / 2**64 relative."""
        return _r.integers(self._bit_generator, low, high, size, dtype, endpoint, self._on(device))

    def permutation(self, x, *, device=None):
        """An int: a random ordering of ``arange(x)`` (int64). An array (or anything
        ``gp.asarray`` takes): a copy with its first axis shuffled, on ``device`` when given,
        else on the array's device."""
        if not isinstance(x, _core.GPUArray):
            try:
                x = _operator.index(x)  # ints and NumPy integers
            except TypeError:
                from . import asarray

                x = asarray(x, device=self._on(device))
        elif device is not None:
            x = x.to_device(device)  # the shuffled copy lives where it is asked for
        return _r.permutation(self._bit_generator, x, self._on(device))


def default_rng(seed=None, *, device=None):
    """A new Generator (``seed`` as in Generator); a Generator is returned as it is."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed, device=device)


_global = None
_global_lock = _threading.Lock()


def _default():
    global _global
    with _global_lock:
        if _global is None:
            _global = Generator()
        return _global


def seed(seed=None):
    """Replaces the generator behind the module-level functions with ``Generator(seed)``."""
    global _global
    g = Generator(seed)
    with _global_lock:
        _global = g


def random(size=None, dtype=_core.float64, *, device=None):
    """``Generator.random`` of the module's generator (see ``seed``)."""
    return _default().random(size, dtype, device=device)


def uniform(low=0.0, high=1.0, size=None, dtype=_core.float64, *, device=None):
    """``Generator.uniform`` of the module's generator."""
    return _default().uniform(low, high, size, dtype, device=device)


def normal(loc=0.0, scale=1.0, size=None, dtype=_core.float64, *, device=None):
    """``Generator.normal`` of the module's generator."""
    return _default().normal(loc, scale, size, dtype, device=device)


def integers(low, high=None, size=None, dtype=_core.int64, endpoint=False, *, device=None):
    """``Generator.integers`` of the module's generator."""
    return _default().integers(low, high, size, dtype, endpoint, device=device)


def permutation(x, *, device=None):
    """``Generator.permutation`` of the module's generator."""
    return _default().permutation(x, device=device)
