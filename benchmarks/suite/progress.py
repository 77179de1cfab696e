"""Progress over the areas of a run: a tqdm bar when tqdm is importable (the running script's
last output line as its postfix), else one text line per start and end of an area (and, on a
terminal, an elapsed-time line rewritten in place)."""

import sys
import time


class TextProgress:
    def __init__(self, total, stream=None):
        self.total, self.done = total, 0
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.area, self.t0 = None, 0.0

    def start(self, area):
        self.area, self.t0 = area, time.monotonic()
        self._print(f"[{self.done + 1}/{self.total}] {area}: running")

    def update(self, last_line):
        if self.tty:
            line = f"  {time.monotonic() - self.t0:6.0f} s  {last_line[:70]}"
            self.stream.write("\r" + line.ljust(80))
            self.stream.flush()

    def skip(self, area, why):
        self.done += 1
        self._print(f"[{self.done}/{self.total}] {area}: skipped ({why})")

    def finish(self, status, seconds, message=""):
        self.done += 1
        if self.tty:
            self.stream.write("\r" + " " * 80 + "\r")
        tail = f": {message}" if message else ""
        self._print(f"[{self.done}/{self.total}] {self.area}: {status} in {seconds:.1f} s{tail}")

    def close(self):
        pass

    def _print(self, text):
        print(text, file=self.stream, flush=True)


class TqdmProgress:
    def __init__(self, total, tqdm):
        self.bar = tqdm(total=total, unit="area", dynamic_ncols=True)
        self.area = None

    def start(self, area):
        self.area = area
        self.bar.set_description(area)

    def update(self, last_line):
        self.bar.set_postfix_str(last_line[:60], refresh=True)

    def skip(self, area, why):
        self.bar.write(f"{area}: skipped ({why})")
        self.bar.update(1)

    def finish(self, status, seconds, message=""):
        tail = f": {message}" if message else ""
        self.bar.write(f"{self.area}: {status} in {seconds:.1f} s{tail}")
        self.bar.set_postfix_str("")
        self.bar.update(1)

    def close(self):
        self.bar.close()


def make(total, plain=False):
    """A tqdm bar if importable, asked for (not `plain`) and drawn on a terminal (a bar's
    redraws would flood a log), else text lines."""
    if not plain and sys.stderr.isatty():
        try:
            from tqdm import tqdm

            return TqdmProgress(total, tqdm)
        except ImportError:
            pass
    return TextProgress(total)
