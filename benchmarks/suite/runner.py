"""Running the area benchmarks as subprocesses: device detection, one process group per area
(killed whole on timeout or Ctrl-C), output to <work>/logs/<area>.log, and the JSON files each
run wrote (new or changed files of the work directory)."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from typing import Optional

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCH_DIR)

DETECT = r"""
import json, sys
import pygpukit as gp
dev = gp.Device(sys.argv[1]) if sys.argv[1] else gp.default_device()
p, i = gp.device_properties(dev), gp.runtime_info()
print(json.dumps({"device": str(dev), "type": dev.type, "gpu": p["name"], "sm": p["sm"],
                  "driver": p["driver_version"], "pygpukit": gp.__version__,
                  "cuda_status": i["cuda_status"]}))
"""


def detect(device=None, env=None, python=sys.executable):
    """The device the scripts will measure, from a child process (the suite's own process
    never holds a GPU context): device, type, gpu, sm, driver, pygpukit, cuda_status."""
    r = subprocess.run(
        [python, "-c", DETECT, device or ""], capture_output=True, text=True, env=env, timeout=600
    )
    if r.returncode:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"detecting the device through pygpukit failed: {tail}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@dataclasses.dataclass
class RunConfig:
    work_dir: str
    stem: str
    quick: bool = False
    cpu: bool = False
    build_dir: str = os.path.join(REPO, "build", "gpu")
    timeout: Optional[float] = None  # seconds per area; None: the adapter's default
    env: Optional[dict] = None
    python: str = sys.executable

    def timeout_for(self, adapter):
        if self.timeout is not None:
            return self.timeout
        return adapter.timeout[1 if (self.quick or self.cpu) else 0]


def command(adapter, cfg):
    """(argv, "") to run the area, or (None, why it is skipped)."""
    if adapter.script:
        path = os.path.join(BENCH_DIR, adapter.script)  # an absolute script stays as is
    else:
        path = os.path.join(cfg.build_dir, "benchmarks", "cpp", adapter.binary)
    if not os.path.exists(path):
        built = "" if adapter.script else " (build with -DPYGPUKIT_BUILD_BENCHMARKS=ON)"
        return None, f"{path} is not present{built}"
    args = adapter.args(cfg.quick, cfg.cpu)
    if args is None:
        return None, "needs a CUDA device"
    if adapter.script:
        return [cfg.python, path, *args, "--out", cfg.work_dir], ""
    out = os.path.join(cfg.work_dir, f"{cfg.stem}-{adapter.area}.json")
    return [path, *args, f"--benchmark_out={out}", "--benchmark_out_format=json"], ""


def _snapshot(folder):
    return {
        n: os.stat(os.path.join(folder, n)).st_mtime_ns
        for n in os.listdir(folder)
        if n.endswith(".json")
    }


def log_tail(path, n=1, limit=16384):
    """The last `n` non-empty lines of a log (carriage returns count as line ends)."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - limit))
        text = f.read().decode("utf-8", "replace").replace("\r", "\n")
    return [x.rstrip() for x in text.split("\n") if x.strip()][-n:]


def last_line(path):
    return (log_tail(path, 1) or [""])[0].strip()


def _kill(p):
    """Ends the area's whole process group: SIGTERM, then SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_area(adapter, cfg, progress):
    """Runs one area: {"status": ok | failed | timeout | skipped, "seconds", "files",
    "message", "log"}; files are the JSON paths the run wrote (failed runs included)."""
    cmd, why = command(adapter, cfg)
    if cmd is None:
        progress.skip(adapter.area, why)
        return {"status": "skipped", "seconds": 0.0, "files": [], "message": why, "log": None}
    os.makedirs(os.path.join(cfg.work_dir, "logs"), exist_ok=True)
    log_path = os.path.join(cfg.work_dir, "logs", f"{adapter.area}.log")
    env = dict(cfg.env if cfg.env is not None else os.environ, PYTHONUNBUFFERED="1")
    before = _snapshot(cfg.work_dir)
    progress.start(adapter.area)
    t0, limit, timed_out = time.monotonic(), cfg.timeout_for(adapter), False
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        p = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
        )
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - t0 > limit:
                        _kill(p)
                        rc, timed_out = p.wait(), True
                        break
                    progress.update(last_line(log_path))
        except BaseException:
            _kill(p)
            raise
    seconds = time.monotonic() - t0
    after = _snapshot(cfg.work_dir)
    files = [os.path.join(cfg.work_dir, n) for n in sorted(after) if before.get(n) != after[n]]
    if timed_out:
        status, message = "timeout", f"killed after {limit:.0f} s"
    elif rc != 0:
        status, message = "failed", f"exit status {rc}: {last_line(log_path)}"
    elif not files:
        status, message = "failed", "exited 0 but wrote no JSON"
    else:
        status, message = "ok", ""
    progress.finish(status, seconds, message)
    return {
        "status": status,
        "seconds": seconds,
        "files": files,
        "message": message,
        "log": log_path,
    }
