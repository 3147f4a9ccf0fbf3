"""Totem under sustained loss and overlapping faults: safety and settling, in numbers.

Two modes over the hostile generator of ``tests/protocols/totem/hostile.py`` (3-8
nodes, loss 5-30 %, duplication to 10 %, reordering to 30 %, 2-7 overlapping episodes
of crashes, restarts, pauses and 2- or 3-way partitions re-cut every token timeout;
Totem's default settings; 40 token timeouts of quiet after the last fault):

``--seeds 0-1000``
    one run per seed with the generator's own draws; counts the runs that violate each
    safety property of the suite's checks (integrity, total order, fifo, view
    agreement, virtual synchrony, safe delivery), the runs that miss convergence as the
    lab defines it for every family (``ringcast.lab.liveness``: an unsettled period after
    the last fault longer than ``--bound`` token timeouts), and the time until the live
    nodes last came to rest in one configuration of exactly them.
``--sweep``
    per group size (3, 5, 8) and loss rate, ``--per`` seeds each with the size and the
    loss fixed: the share of runs that settle within the bound, and the median and
    worst settling time; the loss where fewer than 95 % settle is where Totem stops
    settling.

    python bench/totem_hostile.py --seeds 0-1000 [--bound 10]
    python bench/totem_hostile.py --sweep [--per 20] [--losses 0.1,0.2,0.3,0.4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.soakrun import parse_seeds
from tests.protocols.totem.hostile import TOKEN_TIMEOUT, run, settle_time

from ringcast.lab import reference as checks
from ringcast.lab.liveness import convergence

SAFETY = {
    "integrity": checks.integrity,
    "total_order": checks.total_order,
    "fifo": checks.fifo,
    "view_agreement": checks.view_agreement,
    "virtual_synchrony": checks.virtual_synchrony,
    "safe_delivery": checks.safe_delivery,
}


def soak(seeds: list[int], bound: int) -> int:
    violated: Counter[str] = Counter()
    missed: list[int] = []
    unsettled: list[int] = []
    late: list[int] = []
    times: list[float] = []
    start = time.monotonic()
    for k, seed in enumerate(seeds):
        rows, alive, last = run(seed)
        for prop, check in SAFETY.items():
            found = check(rows)
            if found:
                violated[prop] += 1
                print(f"seed {seed}: {prop}: {found[0]} ({len(found)} in all)", flush=True)
        if convergence(rows, alive, TOKEN_TIMEOUT, bound=bound):
            missed.append(seed)
        st = settle_time(rows, alive, last)
        if st is None:
            unsettled.append(seed)
        elif st > bound * TOKEN_TIMEOUT:
            late.append(seed)
        else:
            times.append(st / TOKEN_TIMEOUT)
        if (k + 1) % 50 == 0:
            print(
                f"... {k + 1}/{len(seeds)}: unsettled {len(unsettled)}, late {len(late)}, "
                f"violations {dict(violated)}",
                file=sys.stderr,
                flush=True,
            )
    took = time.monotonic() - start
    print(f"{len(seeds)} runs in {took:.0f} s")
    print(f"safety violations (runs): {dict(violated) or 'none'}")
    print(
        f"convergence missed (the lab's definition, {bound} token timeouts): {len(missed)} {missed}"
    )
    print(f"not settled by the end of the run: {len(unsettled)} {unsettled}")
    print(f"settled later than {bound} token timeouts: {len(late)} {late}")
    if times:
        times.sort()
        print(
            "settling time of the others, token timeouts: median "
            f"{statistics.median(times):.1f}, 95th {times[int(0.95 * (len(times) - 1))]:.1f}, "
            f"max {times[-1]:.1f}"
        )
    return 1 if violated else 0


def sweep(per: int, losses: list[float], sizes: list[int], bound: int) -> int:
    print(f"| nodes | loss | settled within {bound} token timeouts | median | worst |")
    print("|---|---|---|---|---|")
    for n in sizes:
        for loss in losses:
            ok = 0
            got: list[float] = []
            for seed in range(per):
                rows, alive, last = run(seed, nodes=n, loss=loss)
                st = settle_time(rows, alive, last)
                if st is not None and st <= bound * TOKEN_TIMEOUT:
                    ok += 1
                got.append(float("inf") if st is None else st / TOKEN_TIMEOUT)
            got.sort()
            med = statistics.median(got)
            worst = got[-1]
            print(
                f"| {n} | {loss:.0%} | {ok}/{per} | {med:.1f} | "
                f"{'never' if worst == float('inf') else f'{worst:.1f}'} |",
                flush=True,
            )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-1000")
    ap.add_argument("--bound", type=int, default=10, help="convergence bound, token timeouts")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--per", type=int, default=20)
    ap.add_argument("--losses", default="0.1,0.15,0.2,0.25,0.3,0.35,0.4")
    ap.add_argument("--sizes", default="3,5,8")
    a = ap.parse_args()
    if a.sweep:
        return sweep(
            a.per,
            [float(x) for x in a.losses.split(",")],
            [int(x) for x in a.sizes.split(",")],
            a.bound,
        )
    return soak(parse_seeds(a.seeds), a.bound)


if __name__ == "__main__":
    sys.exit(main())
