"""The discrete-event scheduler: a binary heap of callbacks in integer nanoseconds.

Ties are broken by insertion order (a sequence number), so a run is a pure function
of its inputs. Cancellation is left to the callers (they check a generation number
when called), which keeps the heap a plain list of tuples: the fastest structure
``heapq`` offers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any


class Scheduler:
    __slots__ = ("_heap", "_next", "now", "steps")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._next = itertools.count().__next__
        self.now = 0
        self.steps = 0

    # ``_push`` is bound as a default argument: a local lookup on the hottest call.
    def call_at(self, t: int, fn: Callable[..., Any], *args: Any, _push: Any = heappush) -> None:
        """Run ``fn(*args)`` at virtual time ``t`` (not before ``now``)."""
        if t < self.now:
            t = self.now
        _push(self._heap, (t, self._next(), fn, args))

    def call_later(
        self, delay: int, fn: Callable[..., Any], *args: Any, _push: Any = heappush
    ) -> None:
        _push(self._heap, (self.now + delay, self._next(), fn, args))

    def run(self, until: int) -> None:
        """Run every callback due at or before ``until``; leave ``now`` at ``until``."""
        heap = self._heap
        pop = heappop
        steps = 0
        while heap:
            item = pop(heap)
            t, _, fn, args = item
            if t > until:  # popped one too far: put it back, once per run() call
                heappush(heap, item)
                break
            self.now = t
            fn(*args)
            steps += 1
        self.steps += steps
        if until > self.now:
            self.now = until

    def pending(self) -> int:
        return len(self._heap)
