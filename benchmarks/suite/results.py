"""Reading results (per-area JSON files named <gpu>-sm<XY>-<area>[-suffix].json, or a combined
suite file), normalizing them through the adapters, and the combined JSON the suite writes."""

import collections
import datetime
import json
import os
import platform
import re
import subprocess

from . import registry
from .rows import key, summarize

FORMAT = 1  # the combined file's "suite" field; bump when its layout changes meaning
META_KEYS = ("gpu", "sm", "device", "driver", "pygpukit", "quick")  # a combined file's device
AREA_FILE = re.compile(r"^(?P<stem>.+-sm\d+[a-z]?|cpu)-(?P<rest>.+)\.json$")


class Sources:
    """Raw per-area JSON of one device: raw = {area: {file name: json}}, file order kept (a
    later file's row replaces an earlier one's with the same key); meta describes the device;
    notes say what was skipped and why."""

    def __init__(self, stem, raw, meta, notes):
        self.stem, self.raw, self.meta, self.notes = stem, raw, meta, notes


def _files(path):
    """A folder's JSON files, oldest first (so the newest file's rows win), or the file."""
    if not os.path.isdir(path):
        return [path]
    names = [n for n in os.listdir(path) if n.endswith(".json")]
    committed = _commit_times(path)
    age = {n: committed.get(n) or os.path.getmtime(os.path.join(path, n)) for n in names}
    return [os.path.join(path, n) for n in sorted(names, key=lambda n: (age[n], n))]


def _commit_times(folder):
    """{file name: time of its last commit} for the folder's files git tracks unchanged: a
    checkout's modification times say nothing about when results were measured. Empty
    outside git."""

    def git(*args):
        try:
            r = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True)
        except OSError:  # no git
            return ""
        return r.stdout if r.returncode == 0 else ""

    times, when = {}, None
    for line in git("log", "--format=%x00%ct", "--name-only", "--relative", "--", ".").splitlines():
        if line.startswith("\0"):
            when = float(line[1:])
        elif line and "/" not in line:
            times.setdefault(line, when)
    for entry in git("status", "--porcelain", "-z", "--", ".").split("\0"):
        times.pop(os.path.basename(entry[3:]), None)  # changed or new: its mtime counts
    return times


def _entries(paths, table, notes):
    """(stem, area, file name, data, combined meta or None) for every readable result."""
    out = []
    for path in paths:
        for f in _files(path):
            name = os.path.basename(f)
            with open(f) as fh:
                data = json.load(fh)
            if isinstance(data, dict) and "suite" in data:
                meta = {k: data.get(k) for k in META_KEYS}
                for area, files in data.get("raw", {}).items():
                    out += [(data["stem"], area, n, d, meta) for n, d in files.items()]
                continue
            m = AREA_FILE.match(name)
            area = m and registry.area_of(m["rest"], table)
            if not area:
                notes.append(f"{name}: no adapter for this file name; skipped")
                continue
            out.append((m["stem"], area, name, data, None))
    return out


def load(paths, gpu=None, areas=None):
    """Sources from files, directories and combined files. Files of several devices: the one
    whose stem contains `gpu` (case-insensitive, spaces as dashes), else the most common."""
    table = registry.by_area()
    notes = []
    entries = _entries(paths, table, notes)
    if areas is not None:
        entries = [e for e in entries if e[1] in areas]
    counts = collections.Counter(e[0] for e in entries)
    if gpu:
        want = gpu.replace(" ", "-").lower()
        matching = [s for s in counts if want in s.lower()]
        if not matching:
            raise ValueError(f"no results for GPU {gpu!r} (found: {', '.join(counts) or 'none'})")
        stem = max(matching, key=counts.__getitem__)
    elif counts:
        stem = counts.most_common(1)[0][0]
    else:
        raise ValueError(f"no benchmark results in {', '.join(paths)}")
    for other in counts:
        if other != stem:
            notes.append(f"skipped {counts[other]} file(s) of {other} (choose with --gpu)")
    raw, meta = {}, None
    for s, area, name, data, combined_meta in entries:
        if s == stem:
            raw.setdefault(area, {})[name] = data
            meta = meta or combined_meta
    return Sources(stem, raw, meta or device_meta(stem, raw), notes)


def device_meta(stem, raw):
    """gpu / sm / driver / pygpukit version as the per-area files record them (quick: False;
    the scripts do not all say)."""
    meta = {"gpu": None, "sm": None, "device": "cpu" if stem == "cpu" else "cuda"}
    meta.update(driver=None, pygpukit=None, quick=False)
    for files in raw.values():
        for d in files.values():
            versions = d.get("versions") or {}
            found = {
                "gpu": d.get("gpu"),
                "sm": d.get("sm"),
                "driver": d.get("driver", versions.get("driver")),
                "pygpukit": d.get("pygpukit", versions.get("pygpukit")),
            }
            for k, v in found.items():
                if meta.get(k) is None and v is not None:
                    meta[k] = v
    if meta["gpu"] is None:
        meta["gpu"] = stem.rsplit("-sm", 1)[0].replace("-", " ")
    return meta


def read_files(paths):
    """({file name: data}, [notes]) of JSON files; an unreadable one (e.g. cut short by a
    timeout) is a note, not data."""
    data, notes = {}, []
    for path in paths:
        try:
            with open(path) as f:
                data[os.path.basename(path)] = json.load(f)
        except (OSError, ValueError) as e:
            notes.append(f"{os.path.basename(path)}: unreadable ({type(e).__name__}: {e})")
    return data, notes


def normalize(raw, notes=None):
    """(rows, failures): every file through its area's adapter, in the registry's order; a
    row whose key repeats replaces the earlier one (noted); an adapter error is a failure
    {area: message}, and the other files and areas go on."""
    notes = [] if notes is None else notes
    table = registry.by_area()
    rows, failures = {}, {}
    for area in [a for a in table if a in raw] + [a for a in raw if a not in table]:
        if area not in table:
            notes.append(f"area {area}: no adapter; its raw JSON is kept, no rows")
            continue
        for name, data in raw[area].items():
            try:
                new = table[area].normalize(data)
            except Exception as e:  # noqa: BLE001 - one bad file must not hide the rest
                failures[area] = f"{name}: {type(e).__name__}: {e}"
                continue
            replaced = 0
            for r in new:
                r["area"], r["source"] = area, name
                replaced += key(r) in rows
                rows[key(r)] = r
            if replaced:
                notes.append(f"{name}: {replaced} row(s) replace those of an earlier file")
    return list(rows.values()), failures


def combined(meta, stem, areas, rows, raw, comparison=None, settings=None):
    """The suite's combined JSON: device metadata, per-area status, summary, rows, the
    comparison with an earlier run (if any) and every per-area JSON as read."""
    return {
        "suite": FORMAT,
        "stem": stem,
        **meta,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "settings": settings or {},
        "areas": areas,
        "summary": summarize(rows),
        "rows": rows,
        "compare": comparison,
        "raw": raw,
    }


def write(data, out, name):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    return path
