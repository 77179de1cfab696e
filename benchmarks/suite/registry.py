"""The adapter registry: every module in suite/areas/ that defines ADAPTER is one benchmark
area. Adding an area is adding one such module (CONTRIBUTING.md, "Adding a benchmark area")."""

import dataclasses
import importlib
import pkgutil
from typing import Callable, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Adapter:
    """How the suite runs one area and turns its JSON into rows (suite/rows.py).

    area        the name used by --areas and in the per-area file names
                (<gpu>-sm<XY>-<area>[-suffix].json)
    normalize   raw JSON (one file's) -> list of rows made with rows.make_row
    script      benchmarks/<script>, run as `python <script> *args --out DIR`
    binary      or: a Google Benchmark binary in <build dir>/benchmarks/cpp/, run with
                --benchmark_out; exactly one of script / binary
    full_args   arguments of a full run; quick_args those of --quick
    cpu_args    arguments of a --device cpu smoke run; None: the area needs CUDA
    roofline    "gemm" (TFLOP/s against the GPU's dense peak for the row's dtype) or
                "bandwidth" (GB/s against HBM peak and measured copy bandwidth); None: none
    timeout     seconds allowed for (a full run, a quick or CPU run)
    aliases     other spellings of the area in file names
    order       place in tables and runs (smaller first)
    """

    area: str
    normalize: Callable[[dict], list]
    script: Optional[str] = None
    binary: Optional[str] = None
    full_args: Tuple[str, ...] = ()
    quick_args: Tuple[str, ...] = ()
    cpu_args: Optional[Tuple[str, ...]] = None
    roofline: Optional[str] = None
    timeout: Tuple[float, float] = (3600.0, 900.0)
    aliases: Tuple[str, ...] = ()
    order: int = 100

    def __post_init__(self):
        if (self.script is None) == (self.binary is None):
            raise ValueError(f"adapter {self.area}: give exactly one of script / binary")

    def args(self, quick, cpu):
        """The script's arguments for the run mode, or None where it cannot run (CPU)."""
        if cpu:
            return None if self.cpu_args is None else list(self.cpu_args)
        return list(self.quick_args if quick else self.full_args)

    def names(self):
        return (self.area, *self.aliases)


def adapters():
    """Every adapter in suite/areas/, in run / display order."""
    from . import areas

    found = []
    for info in pkgutil.iter_modules(areas.__path__):
        mod = importlib.import_module(f"{areas.__name__}.{info.name}")
        if hasattr(mod, "ADAPTER"):
            found.append(mod.ADAPTER)
    names = [a.area for a in found]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"two adapters claim area(s) {sorted(dup)}")
    return sorted(found, key=lambda a: (a.order, a.area))


def by_area():
    return {a.area: a for a in adapters()}


def select(names):
    """Adapters for a comma list of areas (None or empty: all), or ValueError naming the
    unknown ones and the known ones."""
    table = by_area()
    if not names:
        return list(table.values())
    want = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in want if n not in table]
    if unknown:
        raise ValueError(f"unknown area(s) {', '.join(unknown)} (known: {', '.join(table)})")
    return [a for a in table.values() if a.area in want]


def area_of(rest, table=None):
    """The area of a file-name tail "<area>[-suffix]" (longest matching area name or alias;
    "memory-cpp" before "memory"), or None."""
    table = table or by_area()
    best = None
    for a in table.values():
        for n in a.names():
            if (rest == n or rest.startswith(n + "-")) and (best is None or len(n) > best[1]):
                best = (a.area, len(n))
    return best[0] if best else None
