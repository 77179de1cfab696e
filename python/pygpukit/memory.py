"""The device memory pool, quotas, spill, and pinned host memory.

Every array's memory comes from a stream-ordered caching pool per device. Freed blocks stay
cached for reuse; under pressure (the process limit or a full device) cached segments are
released least recently used first, then evictable arrays are spilled to pinned host memory
(and paged back in transparently on next use), and only then does allocation raise MemoryError.

    import pygpukit as gp
    gp.memory.set_limit(fraction=0.5)          # or PYGPUKIT_MEMORY_LIMIT=8GiB / 0.5 / 50%
    x = gp.zeros((1 << 20,))
    gp.memory.set_evictable(x)                 # may be spilled under pressure; data is kept
    with gp.memory.Quota("tenant-a", limit=1 << 30) as q:
        y = gp.ones((1024, 1024))              # charged to q
    print(gp.memory.stats()["reserved_bytes"], q.peak)
"""

import numbers as _numbers

import numpy as _np

from . import _core

_m = _core._memory

__all__ = [
    "Quota",
    "empty_cache",
    "evict",
    "get_limit",
    "get_policy",
    "is_evictable",
    "is_resident",
    "pinned_empty",
    "pinned_stats",
    "reset_peak_stats",
    "set_evictable",
    "set_limit",
    "set_pinned_limit",
    "set_policy",
    "stats",
    "transfer_stats",
]


def stats(device=None):
    """Counters of `device`'s pool (default: the default device) as a dict: allocated_bytes,
    requested_bytes, reserved_bytes, cached_bytes, peak_allocated_bytes, peak_reserved_bytes,
    active_blocks, segments, largest_free_block, limit_bytes, num_allocations, num_cache_hits,
    num_driver_allocations, num_driver_frees, num_evictions (cached segments released to the
    driver), num_spills, num_page_ins, spilled_bytes, evictable_buffers."""
    return _m.stats(device)


def empty_cache(device=None):
    """Returns every fully free cached segment of `device`'s pool to the driver."""
    _m.empty_cache(device)


def reset_peak_stats(device=None):
    """Sets the peak counters to the current values."""
    _m.reset_peak_stats(device)


def _bytes_arg(value, what, op):
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise TypeError(f"{op}: {what} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < 0:
        raise ValueError(f"{op}: {what} must be >= 0, got {value}")
    if value >= 2**63:
        raise OverflowError(f"{op}: {what} {value} does not fit in int64")
    return value


def set_limit(bytes=None, *, fraction=None, device=None):  # noqa: A002 - the issue's name
    """Limits the memory `device`'s pool reserves from the driver: `bytes`, or `fraction` of
    the device's total memory (0 < fraction <= 1). `set_limit(None)` removes the limit. Lowering
    it releases cached segments; allocations beyond it spill or raise MemoryError."""
    if bytes is not None and fraction is not None:
        raise ValueError("memory.set_limit: give bytes or fraction, not both")
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, _numbers.Real):
            raise TypeError(
                f"memory.set_limit: fraction must be a number, got {type(fraction).__name__}"
            )
        if not 0 < fraction <= 1:
            raise ValueError(f"memory.set_limit: fraction must be in (0, 1], got {fraction}")
        total = _core.device_properties(device)["total_memory"]
        limit = max(1, int(fraction * total))
    elif bytes is None:
        limit = 0
    else:
        limit = _bytes_arg(bytes, "bytes", "memory.set_limit")
        if limit == 0:
            raise ValueError("memory.set_limit: a limit of 0 bytes; use set_limit(None) for none")
    _m.set_limit(limit, device)


def get_limit(device=None):
    """The pool's limit in bytes, or None when there is none."""
    v = _m.get_limit(device)
    return v if v > 0 else None


def set_policy(policy, *, device=None):
    """How `device`'s pool trades speed for memory (env PYGPUKIT_MEMORY_POLICY):

    - "fast" (default): like PyTorch's caching allocator; large requests split any cached block
      that holds them, so the driver is rarely called, and memory is released only under
      pressure.
    - "compact": keeps reserved memory close to what is in use; a large request takes only a
      cached block within 4 MiB of its size, else an exact segment, and idle cached segments
      are released before the pool grows (more driver calls, each waiting for its stream).
    """
    if not isinstance(policy, str):
        raise TypeError(f"memory.set_policy: policy must be a str, got {type(policy).__name__}")
    _m.set_policy(policy, device)


def get_policy(device=None):
    return _m.get_policy(device)


def set_evictable(x, evictable=True):
    """Lets the pool spill `x`'s memory to pinned host memory under pressure (least recently
    used first). The data is kept and paged back in on next use. `evictable=False` pins it to
    the device again (paging it in if needed). Views share the flag with their base array."""
    if not isinstance(evictable, (bool, _np.bool_)):
        raise TypeError(
            f"memory.set_evictable: evictable must be a bool, got {type(evictable).__name__}"
        )
    _m.set_evictable(x, bool(evictable))


def is_evictable(x):
    return _m.is_evictable(x)


def is_resident(x):
    """False while `x`'s data is spilled to host memory."""
    return _m.is_resident(x)


def evict(x):
    """Spills `x` now (it must be evictable); its next use pages it back in."""
    _m.evict(x)


class Quota:
    """A tenant's memory quota: arrays allocated inside `with quota:` on this thread are
    charged to it, and exceeding `limit` bytes spills the quota's own evictable arrays or raises
    MemoryError naming the quota. `used` and `peak` are device bytes."""

    def __init__(self, name, limit):
        if not isinstance(name, str):
            raise TypeError(f"Quota: name must be a str, got {type(name).__name__}")
        self._q = _m.Quota(name, _bytes_arg(limit, "limit", "Quota"))

    name = property(lambda self: self._q.name)
    used = property(lambda self: self._q.used)
    peak = property(lambda self: self._q.peak)

    @property
    def limit(self):
        return self._q.limit

    @limit.setter
    def limit(self, value):
        self._q.limit = _bytes_arg(value, "limit", "Quota")

    def __enter__(self):
        _m.push_quota(self._q)
        return self

    def __exit__(self, *exc):
        _m.pop_quota(self._q)
        return False

    def __repr__(self):
        return f"Quota(name={self.name!r}, limit={self.limit}, used={self.used}, peak={self.peak})"


def pinned_empty(shape, dtype=None, *, device=None):
    """An uninitialized NumPy array in page-locked host memory from the pinned pool of
    `device`'s backend. Copies to and from it are direct DMA (no staging), and
    `to_numpy(x, out=pinned, blocking=False)` is asynchronous. Default dtype float32."""
    return _m.pinned_empty(shape, _core.float32 if dtype is None else dtype, device)


def pinned_stats(device=None):
    """Counters of the pinned host pool serving `device`'s backend."""
    return _m.pinned_stats(device)


def set_pinned_limit(bytes, *, device=None):  # noqa: A002
    """Limits the pinned host pool (default: a quarter of RAM, or PYGPUKIT_PINNED_LIMIT)."""
    _m.set_pinned_limit(_bytes_arg(bytes, "bytes", "memory.set_pinned_limit"), device)


def transfer_stats(device=None):
    """Bytes moved by `device`'s transfer engine, and how (staged chunks / direct copies)."""
    return _m.transfer_stats(device)
