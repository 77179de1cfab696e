"""The NVRTC JIT engine's cache: compiled kernels (gp.RawKernel, and the JIT-built ops) are kept
in memory for the process and on disk across processes.

The disk cache lives in $PYGPUKIT_CACHE_DIR/jit, else $XDG_CACHE_HOME/pygpukit/jit, else
~/.cache/pygpukit/jit: one file per kernel, named by a hash of its key (NVRTC version, target
arch, options, program name and source). Each file holds the whole key and a checksum of the
image, so a corrupt, truncated or stale file is recompiled and replaced, never loaded.
"""

from . import _core

__all__ = ["cache_info", "clear_cache"]


def cache_info():
    """The cache's state as a dict: directory, disk_usable, disk_error, memory_entries,
    memory_hits, disk_hits, compiles, disk_writes, rejected_entries (corrupt or foreign files
    that were recompiled), compile_seconds (total NVRTC time), nvrtc_available, nvrtc_version
    (or why NVRTC is unavailable); and for the host C++ compiler that builds gp.ElementwiseKernel /
    gp.fuse on the CPU backend: host_directory, host_compiles, host_disk_hits,
    host_rejected_entries (truncated, corrupt or foreign entries that were recompiled),
    host_loaded, host_compile_seconds."""
    return _core._jit_cache_info()


def clear_cache(disk=False):
    """Forgets the compiled kernels of this process, NVRTC's and the host compiler's (later
    launches compile again, or read the disk cache); disk=True also deletes the cache files."""
    if not isinstance(disk, bool):
        raise TypeError(f"jit.clear_cache: disk must be a bool, got {type(disk).__name__}")
    _core._jit_clear_cache(disk)
