"""Simulator event rates, side by side with SimPy in the same run.

1. Bare scheduler: N independent processes each re-arming a timeout, ringcast's
   ``Scheduler.call_later`` against SimPy's ``env.timeout`` in a generator process.
   Delays of 1-7 ns, so many timeouts fall due at the same instant (as messages over
   constant-latency links and timers armed together do in a simulation).
1b. The same with delays drawn from a table of 4096 distinct values up to 1 ms, so
   almost every instant holds one event: the scheduler's worst case.
2. Full simulation: a whole ringcast run (network model + reliable transport + the
   ``basic`` protocol) against a SimPy model of the same traffic (per-message
   latency + loss + a retransmission timer per message), events per wall second.

Usage: python bench/sim_events.py [--events N] [--repeat R]
Prints medians over R repeats and the ratios ringcast / SimPy.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from collections.abc import Callable

import simpy

from ringcast.sim import Scheduler, Simulation, parse_scenario

PROCS = 100


SPREAD = [1 + (i * 2_654_435_761) % 1_000_000 for i in range(4096)]


def ringcast_bare(n_events: int, spread: bool = False) -> float:
    s = Scheduler()
    per = n_events // PROCS
    left = [per] * PROCS
    table = SPREAD if spread else [1 + p % 7 for p in range(PROCS)]
    mask = len(table) - 1 if spread else 0

    def tick(p: int) -> None:
        n = left[p] = left[p] - 1
        if n:
            s.call_later(table[(p + n) & mask] if spread else table[p], tick, p)

    for p in range(PROCS):
        s.call_at(0, tick, p)
    t0 = time.perf_counter()
    s.run(1 << 62)
    dt = time.perf_counter() - t0
    return s.steps / dt


def simpy_bare(n_events: int, spread: bool = False) -> float:
    env = simpy.Environment()
    per = n_events // PROCS
    table = SPREAD if spread else [1 + p % 7 for p in range(PROCS)]
    mask = len(table) - 1 if spread else 0

    def proc(p: int):  # type: ignore[no-untyped-def]
        for n in range(per - 1, -1, -1):
            yield env.timeout(table[(p + n) & mask] if spread else table[p])

    for p in range(PROCS):
        env.process(proc(p))
    t0 = time.perf_counter()
    env.run()
    dt = time.perf_counter() - t0
    return (per * PROCS) / dt


def _scenario(duration: str) -> dict[str, object]:
    return {
        "protocol": "basic",
        "nodes": ["A", "B", "C", "D", "E"],
        "duration": duration,
        "count_bytes": False,
        "network": {
            "latency": {"dist": "exponential", "mean": "1ms", "floor": "200us"},
            "loss": 0.01,
        },
        "workload": [{"nodes": "all", "rate": 400, "size": 100, "order": "fifo"}],
    }


def ringcast_full(seconds: float) -> float:
    sc = parse_scenario(_scenario(f"{seconds}s"))
    res = Simulation(sc, 1).run()
    return res.summary["sim_events"] / res.summary["wall_s"]


def simpy_full(seconds: float) -> float:
    """The same traffic modelled directly in SimPy: lossy latency, acks, retransmit timers."""
    env = simpy.Environment()
    rng = random.Random(1)
    nodes = 5
    events = [0]
    horizon = int(seconds * 1e9)

    def deliver_later(delay: int, fn: Callable[[], None]):  # type: ignore[no-untyped-def]
        yield env.timeout(delay)
        events[0] += 1
        fn()

    def lat() -> int:
        return max(200_000, int(rng.expovariate(1 / 1_000_000)))

    def send(dst: int, on_ack: Callable[[], None]) -> None:
        if rng.random() >= 0.01:
            env.process(deliver_later(lat(), lambda: env.process(deliver_later(lat(), on_ack))))

    def sender(me: int):  # type: ignore[no-untyped-def]
        while True:
            yield env.timeout(2_500_000)
            events[0] += 1
            for dst in range(nodes):
                if dst != me:
                    acked = [False]

                    def on_ack(a: list[bool] = acked) -> None:
                        a[0] = True

                    send(dst, on_ack)
                    env.process(retransmit(dst, acked))

    def retransmit(dst: int, acked: list[bool]):  # type: ignore[no-untyped-def]
        for _ in range(5):
            yield env.timeout(20_000_000)
            events[0] += 1
            if acked[0]:
                return
            send(dst, lambda: acked.__setitem__(0, True))

    def heartbeat(me: int):  # type: ignore[no-untyped-def]
        while True:
            yield env.timeout(50_000_000)
            events[0] += 1
            for dst in range(nodes):
                if dst != me:
                    env.process(deliver_later(lat(), lambda: None))

    for me in range(nodes):
        env.process(sender(me))
        env.process(heartbeat(me))
    t0 = time.perf_counter()
    env.run(until=horizon)
    dt = time.perf_counter() - t0
    return events[0] / dt


def median_of(fn: Callable[[], float], repeat: int) -> float:
    vals = []
    for _ in range(repeat):
        gc.collect()
        vals.append(fn())
    return statistics.median(vals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=5.0, help="simulated seconds, full runs")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rows = []
    for name, ours, theirs in (
        ("bare scheduler", lambda: ringcast_bare(a.events), lambda: simpy_bare(a.events)),
        (
            "bare, distinct",
            lambda: ringcast_bare(a.events, True),
            lambda: simpy_bare(a.events, True),
        ),
        ("full simulation", lambda: ringcast_full(a.seconds), lambda: simpy_full(a.seconds)),
    ):
        # Interleave so both see the same machine conditions.
        r, s = [], []
        for _ in range(a.repeat):
            r.append(median_of(ours, 1))
            s.append(median_of(theirs, 1))
        rows.append((name, statistics.median(r), statistics.median(s)))
    print(f"{'benchmark':<18} {'ringcast ev/s':>14} {'SimPy ev/s':>12} {'ratio':>6}")
    for name, r, s in rows:
        print(f"{name:<18} {r:>14,.0f} {s:>12,.0f} {r / s:>6.2f}")


if __name__ == "__main__":
    main()
