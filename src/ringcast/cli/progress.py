"""A dependency-free progress bar on stderr, shown only for runs longer than a moment."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Call with a fraction in [0, 1]; draws nothing until ``delay`` seconds have passed."""

    def __init__(
        self, label: str, *, delay: float = 2.0, stream: TextIO | None = None, width: int = 30
    ):
        self.label = label
        self.delay = delay
        self.stream = stream or sys.stderr
        self.width = width
        self.t0 = time.monotonic()
        self.shown = False

    def __call__(self, fraction: float, note: str = "") -> None:
        elapsed = time.monotonic() - self.t0
        if elapsed < self.delay and fraction < 1.0:
            return
        if not self.shown and fraction >= 1.0 and elapsed < self.delay:
            return
        self.shown = True
        filled = int(self.width * min(max(fraction, 0.0), 1.0))
        bar = "#" * filled + "-" * (self.width - filled)
        end = "\n" if fraction >= 1.0 else ""
        self.stream.write(f"\r{self.label} [{bar}] {fraction:6.1%} {elapsed:6.1f}s {note}{end}")
        self.stream.flush()
