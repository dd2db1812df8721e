"""A progress bar on stderr for work that takes more than a second (compiling, tuning).

    with Progress("compiling", total=3) as bar:
        ...; bar.advance(); ...

Nothing is printed for work that ends within `delay` seconds; after that the bar is redrawn
in place (a terminal) or printed once per step (a log file), and closed with a newline.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    def __init__(self, what: str, total: int, delay: float = 1.0, stream: TextIO | None = None,
                 width: int = 24):
        self.what, self.total, self.delay, self.width = what, max(total, 1), delay, width
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.shown = False
        self._drawn = -1
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self.shown:
                self._draw(final=True)

    def advance(self, steps: int = 1) -> None:
        with self._lock:
            self.done = min(self.total, self.done + steps)
            if self.shown and not self._interactive():
                self._draw()

    def line(self) -> str:
        filled = round(self.width * self.done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        seconds = time.perf_counter() - self._start
        return f"tilesync: {self.what} [{bar}] {self.done}/{self.total} {seconds:.1f} s"

    def _interactive(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def _draw(self, final: bool = False) -> None:
        if self._interactive():
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        elif self._drawn != self.done:
            self.stream.write(self.line() + "\n")
        self._drawn = self.done
        self.stream.flush()

    def _tick(self) -> None:
        if self._stop.wait(self.delay):
            return
        with self._lock:
            self.shown = True
            self._draw()
        while not self._stop.wait(0.25):
            if self._interactive():
                with self._lock:
                    self._draw()


__all__ = ["Progress"]
