from __future__ import annotations

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
