"""The Array API's inspection objects over the native dtypes and devices (finfo, iinfo, isdtype,
__array_namespace_info__; the numbers and promotion rules come from the C++ core) and the named
results of the unique_* functions (computed by the C++ core)."""

from collections import namedtuple
from dataclasses import dataclass

from . import _core

_KIND_CODES = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}

_ALL_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)  # the 8-bit floats are storage formats outside the Array API's set: not listed


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the Array API's name
    """Machine limits of a floating dtype (of the real component for complex dtypes)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: object


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the Array API's name
    """Machine limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: object


def finfo(type, /):  # noqa: A002 - the Array API's parameter name
    """Limits of a floating or complex dtype (or of an array's dtype)."""
    return finfo_object(**_core._finfo(type))


def iinfo(type, /):  # noqa: A002 - the Array API's parameter name
    """Limits of an integer dtype (or of an array's dtype)."""
    return iinfo_object(**_core._iinfo(type))


def _matches(dt, kind):
    if isinstance(kind, str):
        codes = _KIND_CODES.get(kind)
        if codes is None:
            raise ValueError(
                f"isdtype: unknown kind {kind!r}; expected one of {', '.join(_KIND_CODES)}"
            )
        return dt.kind in codes
    if isinstance(kind, _core.dtype):
        return dt == kind
    raise TypeError(
        f"isdtype: kind must be a dtype, a kind name or a tuple of them, got {type(kind).__name__}"
    )


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a dtype, one of 'bool', 'signed integer', 'unsigned
    integer', 'integral', 'real floating', 'complex floating', 'numeric', or a tuple of those."""
    if not isinstance(dtype, _core.dtype):
        raise TypeError(f"isdtype: dtype must be a pygpukit dtype, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return any(_matches(dtype, k) for k in kind)
    return _matches(dtype, kind)


class _NamespaceInfo:
    """What this namespace supports (Array API __array_namespace_info__)."""

    def capabilities(self):
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
        }

    def default_device(self):
        return _core.default_device()

    def _check_device(self, device):
        if device is not None:
            _core._parse_device(device, "__array_namespace_info__")

    def default_dtypes(self, *, device=None):
        self._check_device(device)
        return {
            "real floating": _core.float32,
            "complex floating": _core.complex64,
            "integral": _core.int64,
            "indexing": _core.int64,
        }

    def dtypes(self, *, device=None, kind=None):
        self._check_device(device)
        out = {}
        for name in _ALL_DTYPES:
            dt = getattr(_core, name)
            if kind is None or isdtype(dt, kind):
                out[name] = dt
        return out

    def devices(self):
        return list(_core.devices())


def __array_namespace_info__():  # noqa: N807 - the Array API's name
    """The namespace's inspection object: capabilities, default_device, default_dtypes, dtypes
    and devices."""
    return _NamespaceInfo()


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_values(x, /):
    """The distinct values of x (flattened), sorted; every NaN is distinct."""
    return _core._unique(x, False, False, False)[0]


def unique_counts(x, /):
    """(values, counts): the distinct values of x and how often each occurs."""
    v, _, _, c = _core._unique(x, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    """(values, inverse_indices): values[inverse_indices] reconstructs x (x's shape)."""
    v, _, inv, _ = _core._unique(x, False, True, False)
    return UniqueInverseResult(v, inv)


def unique_all(x, /):
    """(values, indices, inverse_indices, counts): the distinct values, the first occurrence of
    each in the flattened x, the inverse indices (x's shape) and the counts."""
    return UniqueAllResult(*_core._unique(x, True, True, True))
