"""Tribes, GMS and basic under the shared hostile generator: safety and settling.

Each seed is one run of ``ringcast.sim.hostile`` (3-8 nodes, 5-30% loss, duplication,
reordering, asymmetric links, 2-7 overlapping crashes, restarts, pauses, two- and
three-way and flapping partitions), the protocol's default settings (GMS: two_phase),
faults scaled by the protocol's failure-detection timeout (its spec's ``timeout``:
Tribes' member_drop_time 250 ms, GMS' heartbeat_interval x heartbeat_misses 200 ms).

``--seeds 0-1000``
    one run per seed; counts the runs that violate each safety property the lab checks
    for these protocols (view_agreement, leader_agreement, integrity, fifo) and the
    machine's invariant rows; the runs that miss convergence as the lab defines it for
    every family (``ringcast.lab.liveness``: an unsettled period after the last fault
    longer than ``--bound`` timeouts); the runs not settled *at the end*; and the
    *settling time*: from the last fault to the first moment all live
    nodes were in one view of exactly themselves, in failure-detection timeouts.
    ``--quiet Q`` lengthens the fault-free end of the run to Q timeouts (the
    generator's is 12); ``--nodes 16,32`` draws group sizes from 16 to 32 instead of
    3 to 8, as ``sweeps/scale.toml`` does. basic is held to what it claims (integrity,
    FIFO) besides its convergence.
``--sweep``
    per group size and loss rate (fixed, no asymmetric link; the rest of the hostile
    draw as it comes), ``--per`` seeds each: how many runs settled within ``--bound``
    timeouts of the last fault, the median and worst settling time, and how many were
    still (or again) unsettled at the end of a quiet end of ``--quiet`` timeouts.

    python bench/views_hostile.py --protocol gms --seeds 0-1000 --jobs 1
    python bench/views_hostile.py --protocol tribes --sweep --per 20 --quiet 60
    python bench/views_hostile.py --protocol basic --seeds 1-60 --nodes 16,32 --quiet 40
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.soakrun import parse_seeds

from ringcast.lab import reference as checks
from ringcast.lab.liveness import convergence
from ringcast.protocols import registry
from ringcast.sim import Simulation
from ringcast.sim.hostile import HOSTILE, hostile_scenario

Row = dict[str, Any]
SAFETY = {
    "invariant": checks.invariants,
    "view_agreement": checks.view_agreement,
    "leader_agreement": checks.leader_agreement,
    "integrity": checks.integrity,
    "fifo": checks.fifo,
    "merge_atomicity": checks.merge_atomicity,
}
RESETS = ("crash", "restart", "join")


@dataclasses.dataclass(frozen=True)
class Settling:
    first: int | None
    """From the last fault to the first moment every live node was in one view of
    exactly the live nodes (ns; None: never)."""
    at_end: bool
    """Settled so at the end of the run (the lab's convergence)."""
    relapses: tuple[int, ...]
    """After the first settling, each period in which they were not (a false suspicion
    under loss: an exclusion and the merge or election that follows), ns; one still
    open at the end counts with its length so far."""


def settling(rows: Iterable[Row], live: frozenset[str], since: int, end: int) -> Settling:
    """How the live nodes settled after the last fault at ``since`` (see :class:`Settling`)."""
    current: dict[str, tuple[str, frozenset[str]]] = {}

    def settled() -> bool:
        views = {current.get(n) for n in live}
        if len(views) != 1:
            return False
        (v,) = views
        return v is not None and v[1] == live

    first: int | None = None
    prev: bool | None = None  # settled at the last row since the last fault
    start = 0
    relapses: list[int] = []
    for r in rows:
        if prev is None and r["t"] >= since:
            prev = settled()
            if prev:
                first = since
        if r["kind"] == "view":
            current[r["node"]] = (r["view"], frozenset(r["members"]))
        elif r["kind"] == "fault" and r["detail"].get("action") in RESETS:
            current.pop(r["node"], None)
        else:
            continue
        if prev is None:
            continue
        now = settled()
        if prev and not now:
            start = r["t"]
        elif now and not prev:
            if first is None:
                first = r["t"]
            else:
                relapses.append(r["t"] - start)
        prev = now
    at_end = settled()
    if prev is None:  # no row after the last fault
        first = since if at_end else None
    elif not prev and first is not None:
        relapses.append(end - start)
    return Settling(None if first is None else first - since, at_end, tuple(relapses))


@dataclasses.dataclass(frozen=True)
class Outcome:
    seed: int
    nodes: int
    loss: float
    worst_link: float
    violations: dict[str, list[str]]
    settle: float | None  # failure-detection timeouts after the last fault
    at_end: bool
    relapses: tuple[float, ...]  # failure-detection timeouts each
    quiet: float  # the length of the quiet end, failure-detection timeouts
    missed: bool = False  # convergence as the lab defines it (an unsettled period > bound)


def one(
    protocol: str,
    seed: int,
    quiet: float,
    nodes: int | tuple[int, ...] | None = None,
    loss: float | None = None,
    bound: float = 10.0,
) -> Outcome:
    spec = registry.get(protocol)
    timeout = spec.timeout_ns({})
    assert timeout is not None
    h = dataclasses.replace(HOSTILE, quiet=quiet)
    if isinstance(nodes, tuple):  # a range to draw from, as the lab's generator does
        h, nodes = dataclasses.replace(h, nodes=(nodes[0], nodes[-1])), None
    if loss is not None:
        h = dataclasses.replace(h, loss=(loss, loss), asymmetric_links=(0, 0))
    run = hostile_scenario(seed, protocol, token_timeout=timeout, harshness=h, nodes=nodes)
    rows = Simulation(run.scenario, seed=seed).run().events()
    found = {
        k: v
        for k, check in SAFETY.items()
        if (k == "invariant" or k in spec.claims) and (v := check(rows))
    }
    st = settling(rows, run.live, run.quiet_from, run.scenario.duration)
    net = run.scenario.network
    worst = max([net.loss, *(lk.loss for lk in net.links if lk.loss is not None)])
    return Outcome(
        seed,
        len(run.scenario.nodes),
        net.loss,
        worst,
        found,
        None if st.first is None else st.first / timeout,
        st.at_end,
        tuple(x / timeout for x in st.relapses),
        (run.scenario.duration - run.quiet_from) / timeout,
        bool(
            convergence(
                rows,
                run.live,
                timeout,
                bound=bound,
                end=run.scenario.duration,
                on_members=spec.converge_on == "members",
            )
        ),
    )


def _pct(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def _relapses(outs: list[Outcome]) -> tuple[int, float, float, float]:
    """Relapses (count), per 100 settled timeouts, the longest, and the share of the
    time after the first settling spent unsettled."""
    rel = [x for o in outs for x in o.relapses]
    after = sum(o.quiet - o.settle for o in outs if o.settle is not None)
    rate = 100 * len(rel) / after if after else 0.0
    share = sum(rel) / after if after else 0.0
    return len(rel), rate, max(rel, default=0.0), share


def soak(
    protocol: str,
    seeds: list[int],
    quiet: float,
    jobs: int,
    bound: float,
    sizes: tuple[int, ...] = HOSTILE.nodes,
) -> int:
    t0 = time.monotonic()
    by_prop: Counter[str] = Counter()
    failing: dict[str, list[int]] = {}
    not_end: list[Outcome] = []
    times: list[float] = []
    never: list[Outcome] = []
    outs: list[Outcome] = []
    with ProcessPoolExecutor(jobs) as pool:
        runs = len(seeds)
        futs = pool.map(
            one,
            [protocol] * runs,
            seeds,
            [quiet] * runs,
            [sizes] * runs,
            [None] * runs,
            [bound] * runs,
            chunksize=4,
        )
        for k, o in enumerate(futs):
            outs.append(o)
            for prop, lst in o.violations.items():
                by_prop[prop] += 1
                failing.setdefault(prop, []).append(o.seed)
                print(f"seed {o.seed}: {prop}: {lst[0]} ({len(lst)} in all)", flush=True)
            if not o.at_end:
                not_end.append(o)
            if o.settle is None:
                never.append(o)
            else:
                times.append(o.settle)
            if k and k % 100 == 0:
                print(
                    f"... {k}/{len(seeds)}: violations {dict(by_prop)}, not converged at "
                    f"the end {len(not_end)}",
                    file=sys.stderr,
                    flush=True,
                )
    took = time.monotonic() - t0
    bad = sorted({s for lst in failing.values() for s in lst})
    print(f"{protocol}: {len(seeds)} hostile runs in {took:.0f} s, quiet end {quiet:g} timeouts")
    print(f"runs with a safety violation: {len(bad)}")
    for prop in SAFETY:
        print(f"  {prop}: {by_prop[prop]} {failing.get(prop, [])[:20]}")
    missed = [o.seed for o in outs if o.missed]
    print(
        f"convergence missed (the lab's definition, {bound:g} timeouts): "
        f"{len(missed)} {missed[:40]}"
    )
    print(f"not settled at the end of the run: {len(not_end)} {[o.seed for o in not_end][:40]}")
    print(
        f"  of which never settled after the last fault: {len(never)} "
        f"{[o.seed for o in never][:40]}"
    )
    for lo, hi in ((0.0, 0.2), (0.2, 0.5), (0.5, 1.0)):
        group = [o for o in outs if lo <= o.worst_link < hi]
        if group:
            ne = sum(not o.at_end for o in group)
            within = sum(o.settle is not None and o.settle <= bound for o in group)
            print(
                f"  worst link loss in [{lo:.0%}, {hi:.0%}): {len(group)} runs, "
                f"{ne} not converged at the end, {within} settled within {bound:g} timeouts"
            )
    if times:
        times.sort()
        print(
            f"settling time (first settled after the last fault, {len(times)} runs), "
            f"timeouts: median {statistics.median(times):.1f}, 90th {_pct(times, 0.9):.1f}, "
            f"95th {_pct(times, 0.95):.1f}, 99th {_pct(times, 0.99):.1f}, max {times[-1]:.1f}"
        )
    n_rel, rate, longest, share = _relapses(outs)
    longs = sorted(x for o in outs for x in o.relapses)
    print(
        f"relapses after the first settling (false suspicions under loss): {n_rel} in "
        f"{sum(bool(o.relapses) for o in outs)} runs, {rate:.2f} per 100 timeouts settled; "
        f"length median {statistics.median(longs) if longs else 0:.1f}, "
        f"max {longest:.1f} timeouts; {share:.1%} of the settled time lost"
    )
    return 1 if bad else 0


def sweep(
    protocol: str,
    per: int,
    losses: list[float],
    sizes: list[int],
    bound: float,
    quiet: float,
    jobs: int,
) -> int:
    print(
        f"| nodes | loss | settled within {bound:g} timeouts | median | worst | "
        f"unsettled at the end ({quiet:g} timeouts) | relapses / 100 timeouts | longest relapse |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(jobs) as pool:
        for n in sizes:
            for loss in losses:
                seeds = list(range(per))
                outs = list(
                    pool.map(
                        one,
                        [protocol] * per,
                        seeds,
                        [quiet] * per,
                        [n] * per,
                        [loss] * per,
                    )
                )
                bad = [o for o in outs if o.violations]
                for o in bad:
                    print(f"seed {o.seed} n={n} loss={loss}: {o.violations}", file=sys.stderr)
                got = sorted(float("inf") if o.settle is None else o.settle for o in outs)
                ok = sum(x <= bound for x in got)
                worst = got[-1]
                med = statistics.median(got)
                print(
                    f"| {n} | {loss:.0%} | {ok}/{per} | "
                    f"{'never' if med == float('inf') else f'{med:.1f}'} | "
                    f"{'never' if worst == float('inf') else f'{worst:.1f}'} | "
                    f"{sum(not o.at_end for o in outs)}/{per} | {_relapses(outs)[1]:.1f} | "
                    f"{_relapses(outs)[2]:.1f} |",
                    flush=True,
                )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", choices=("gms", "tribes", "basic"), default="gms")
    ap.add_argument("--seeds", default="0-1000")
    ap.add_argument("--quiet", type=float, default=HOSTILE.quiet, help="timeouts")
    ap.add_argument(
        "--bound", type=float, default=10.0, help="convergence bound (the lab's), timeouts"
    )
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--per", type=int, default=20)
    ap.add_argument("--losses", default="0.05,0.1,0.15,0.2,0.25,0.3")
    ap.add_argument("--sizes", default="3,5,8")
    ap.add_argument("--nodes", help="soak: draw group sizes from LO,HI (the generator's 3,8)")
    a = ap.parse_args()
    if a.sweep:
        return sweep(
            a.protocol,
            a.per,
            [float(x) for x in a.losses.split(",")],
            [int(x) for x in a.sizes.split(",")],
            a.bound,
            a.quiet,
            a.jobs,
        )
    nodes = tuple(int(x) for x in a.nodes.split(",")) if a.nodes else HOSTILE.nodes
    return soak(a.protocol, parse_seeds(a.seeds), a.quiet, a.jobs, a.bound, nodes)


if __name__ == "__main__":
    sys.exit(main())
