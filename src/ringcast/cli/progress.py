"""Progress on stderr with rich: a live bar on a terminal, a few plain lines elsewhere.

On a terminal the bar is drawn (and redrawn in place) once ``delay`` seconds have
passed, so a quick job draws nothing. When stderr is not a terminal (a log file, CI,
a pipe) no bar is drawn at all: one plain line at each quarter of the way and one at
the end, so that a log holds five lines, not hundreds of carriage-return frames.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

STEPS = 4
"""Plain lines off a terminal: one each time this many'th of the way is passed."""


class ProgressBar:
    """Call with a fraction in [0, 1] (and a note); shows nothing until ``delay``
    seconds have passed. ``stream`` defaults to stderr; ``terminal`` overrides the
    detection of a terminal (for tests)."""

    def __init__(
        self,
        label: str,
        *,
        delay: float = 2.0,
        stream: TextIO | None = None,
        terminal: bool | None = None,
    ):
        self.label = label
        self.delay = delay
        self.console = Console(file=stream or sys.stderr, force_terminal=terminal, highlight=False)
        self.t0 = time.monotonic()
        self.shown = False
        self._progress: Progress | None = None
        self._task: int | None = None
        self._step = -1

    @property
    def live(self) -> bool:
        return self.console.is_terminal

    def __call__(self, fraction: float, note: str = "") -> None:
        elapsed = time.monotonic() - self.t0
        fraction = min(max(fraction, 0.0), 1.0)
        if not self.shown and elapsed < self.delay:
            return
        self.shown = True
        if self.live:
            self._draw(fraction, note)
        else:
            self._line(fraction, note, elapsed)

    def _draw(self, fraction: float, note: str) -> None:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=1.0, note=note)
        assert self._task is not None
        self._progress.update(self._task, completed=fraction, note=note)  # type: ignore[arg-type]
        if fraction >= 1.0:
            self._progress.stop()

    def _line(self, fraction: float, note: str, elapsed: float) -> None:
        step = int(fraction * STEPS)
        if step <= self._step:
            return
        self._step = step
        text = f"{self.label}: {fraction:6.1%} after {elapsed:.1f}s"
        self.console.print(text + (f"  {note}" if note else ""), soft_wrap=True)
