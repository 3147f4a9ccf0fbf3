"""The discrete-event scheduler: a binary heap of instants, a FIFO bucket per instant.

Virtual time is integer nanoseconds. Every callback due at the same instant sits in
one bucket, in the order it was scheduled, and the heap holds each pending instant
once. So ties are broken by insertion order, exactly as a heap of
``(time, sequence, callback)`` entries would, and a run is a pure function of its
inputs; but an event that joins an instant already pending costs a dict look-up and
an append instead of a heap push, and the heap compares plain integers, not tuples.
Simulations have many such ties: a multicast over constant-latency links lands at
every peer in the same nanosecond, timers armed together expire together.

A callback scheduled for the instant being run (``call_at(now, ...)``) goes to a
fresh bucket for that instant, which runs right after the current one: the same
order a sequence number would give.

A bucket holding a single callback is stored as the bare ``(fn, args)`` entry and
becomes a list only when a second one joins it: most instants of a run with random
latencies hold one event, and they then cost no list at all.

Cancellation is left to the callers (they check a generation number when called).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

Entry = tuple[Callable[..., Any], tuple[Any, ...]]
Bucket = Entry | list[Entry]


class Scheduler:
    __slots__ = ("_buckets", "_times", "now", "steps")

    def __init__(self) -> None:
        self._times: list[int] = []  # heap of the instants that have a bucket
        self._buckets: dict[int, Bucket] = {}
        self.now = 0
        self.steps = 0

    # ``_push`` is bound as a default argument: a local lookup on the hottest call.
    def call_at(self, t: int, fn: Callable[..., Any], *args: Any, _push: Any = heappush) -> None:
        """Run ``fn(*args)`` at virtual time ``t`` (not before ``now``)."""
        if t < self.now:
            t = self.now
        buckets = self._buckets
        bucket = buckets.get(t)
        if bucket is None:
            buckets[t] = (fn, args)
            _push(self._times, t)
        elif bucket.__class__ is list:
            bucket.append((fn, args))  # type: ignore[union-attr]
        else:
            buckets[t] = [bucket, (fn, args)]  # type: ignore[list-item]

    def call_later(
        self, delay: int, fn: Callable[..., Any], *args: Any, _push: Any = heappush
    ) -> None:
        """Run ``fn(*args)`` ``delay`` nanoseconds from now (``delay >= 0``).

        The body repeats :meth:`call_at`'s on purpose: this is the hottest call of a
        simulation, and delegating would add a Python call to every event."""
        t = self.now + delay
        buckets = self._buckets
        bucket = buckets.get(t)
        if bucket is None:
            buckets[t] = (fn, args)
            _push(self._times, t)
        elif bucket.__class__ is list:
            bucket.append((fn, args))  # type: ignore[union-attr]
        else:
            buckets[t] = [bucket, (fn, args)]  # type: ignore[list-item]

    def run(self, until: int) -> None:
        """Run every callback due at or before ``until``; leave ``now`` at ``until``."""
        times = self._times
        take = self._buckets.pop
        pop = heappop
        steps = 0
        while times:
            t = times[0]
            if t > until:
                break
            pop(times)
            self.now = t
            # Taken out before it runs: what it schedules for ``t`` opens a new bucket.
            bucket = take(t)
            if bucket.__class__ is list:
                for fn, args in bucket:  # type: ignore[misc]
                    fn(*args)
                steps += len(bucket)
            else:
                bucket[0](*bucket[1])  # type: ignore[operator]
                steps += 1
        self.steps += steps
        if until > self.now:
            self.now = until

    def pending(self) -> int:
        """How many callbacks are waiting."""
        return sum(len(b) if b.__class__ is list else 1 for b in self._buckets.values())
