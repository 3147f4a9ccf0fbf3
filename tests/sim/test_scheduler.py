from __future__ import annotations

import heapq
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ringcast.sim import Scheduler
from ringcast.sim.rng import derive, stream


def test_order_by_time_then_insertion() -> None:
    s = Scheduler()
    out: list[str] = []
    s.call_at(5, out.append, "c")
    s.call_at(1, out.append, "a")
    s.call_at(5, out.append, "d")
    s.call_at(3, out.append, "b")
    s.run(10)
    assert out == ["a", "b", "c", "d"]
    assert s.now == 10 and s.steps == 4


def test_run_stops_at_until_and_resumes() -> None:
    s = Scheduler()
    out: list[int] = []

    def tick(n: int) -> None:
        out.append(s.now)
        if n:
            s.call_later(10, tick, n - 1)

    s.call_at(0, tick, 5)
    s.run(25)
    assert out == [0, 10, 20]
    s.run(100)
    assert out == [0, 10, 20, 30, 40, 50]


def test_past_times_are_clamped_to_now() -> None:
    s = Scheduler()
    s.run(50)
    seen: list[int] = []
    s.call_at(10, lambda: seen.append(s.now))
    s.run(60)
    assert seen == [50]


def test_streams_are_independent_and_reproducible() -> None:
    a1 = [stream(7, "link:A->B").random() for _ in range(3)]
    a2 = [stream(7, "link:A->B").random() for _ in range(3)]
    b = [stream(7, "link:B->A").random() for _ in range(3)]
    assert a1 == a2 and a1 != b
    assert derive(1, "x") != derive(2, "x")


def test_same_instant_callbacks_run_after_the_current_bucket() -> None:
    s = Scheduler()
    out: list[str] = []

    def first() -> None:
        out.append("first")
        s.call_at(s.now, out.append, "scheduled-during")  # same instant, after "second"
        s.call_later(0, out.append, "later-0")

    s.call_at(5, first)
    s.call_at(5, out.append, "second")
    assert s.pending() == 2
    s.run(5)
    assert out == ["first", "second", "scheduled-during", "later-0"]
    assert s.pending() == 0 and s.steps == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3)), min_size=1, max_size=60))
def test_matches_a_heap_of_time_sequence_entries(plan: list[tuple[int, int]]) -> None:
    """The bucketed heap runs callbacks in exactly (time, insertion order), like a
    reference heap of ``(t, seq, name)`` entries, including callbacks that schedule
    more callbacks (each entry ``(t, k)`` re-arms itself ``k`` times, 0-2 ns later)."""
    s = Scheduler()
    got: list[tuple[int, str]] = []
    ref: list[tuple[int, int, str, int]] = []
    seq = itertools.count()

    def cb(name: str, k: int) -> None:
        got.append((s.now, name))
        if k:
            s.call_later(k % 3, cb, name + "'", k - 1)

    for i, (t, k) in enumerate(plan):
        s.call_at(t, cb, f"e{i}", k)
        heapq.heappush(ref, (t, next(seq), f"e{i}", k))
    s.run(10_000)
    want: list[tuple[int, str]] = []
    while ref:
        t, _, name, k = heapq.heappop(ref)
        want.append((t, name))
        if k:
            heapq.heappush(ref, (t + k % 3, next(seq), name + "'", k - 1))
    assert got == want
    assert s.steps == len(want)
