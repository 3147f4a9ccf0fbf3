"""Raincore soak under the shared hostile generator (``ringcast.sim.hostile``).

python bench/raincore_hostile.py --seeds 0-2000          # safety violations by property
python bench/raincore_hostile.py --seeds 0-2000 --jobs 2
python bench/raincore_hostile.py --seeds 0-2000 --mild   # only loss <= 20%, no asymmetric link

Each seed is one hostile run (3-8 nodes, 5-30% loss, duplication, reordering,
asymmetric links, 2-7 overlapping crashes, restarts, pauses, two- and three-way and
flapping partitions); the checks are view agreement, total order, mutual exclusion
with fencing (overlapping holders must hold different fences) and the machine's own
invariant rows. Also counted: grants whose fence is below an earlier one (the
documented limit, which a fencing resource refuses) and liveness, by class of network
(loss and asymmetric links), against the lab's convergence (``ringcast.lab.liveness``,
one definition for every family, the bound of docs/protocols/raincore.md): every
unsettled period ends within 10 token timeouts. A run is settled while its live nodes
are all in one configuration of exactly themselves; measured in the quiet end (12
token timeouts after the last fault): the time to settle after the last fault and the
longest unsettled period from then on (the loss goes on, and a false failure-on-delivery
unsettles the group again; a period still open at the end counts with its length so
far).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.raincore.hostile import (
    SETTLE_BOUND,
    TOKEN_TIMEOUT,
    hostile_run,
    mild,
    safety,
)
from tests.protocols.soakrun import parse_seeds

from ringcast.lab import reference as checks
from ringcast.lab.liveness import components, settling
from ringcast.sim import Simulation
from ringcast.sim.hostile import HostileRun

BOUND = SETTLE_BOUND / TOKEN_TIMEOUT


def network_class(run: HostileRun) -> str:
    net = run.scenario.network
    if net.links:
        return "asymmetric link (2-3x loss one way)"
    if net.loss <= 0.2:
        return "loss <= 20%"
    return "loss 20-25%" if net.loss <= 0.25 else "loss 25-30%"


CLASSES = (
    "loss <= 20%",
    "loss 20-25%",
    "loss 25-30%",
    "asymmetric link (2-3x loss one way)",
)


Result = tuple[int, dict[str, list[str]], int, float | None, float, str]


def one(seed: int) -> Result:
    """Safety violations, fence regressions, token timeouts to settle (None: not in
    the quiet end), the longest unsettled period in the quiet end (token timeouts,
    counted from the last fault) and the network class of one run."""
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    found = safety(rows, run.scenario.duration)
    regress = len(checks.fence_regressions(rows))
    tf = max((r["t"] for r in rows if r["kind"] == "fault"), default=0)
    end = run.scenario.duration
    periods = [settling(rows, c, tf, end, on_members=True) for c in components(rows, run.live)]
    worst = max((p.worst for p in periods), default=0)
    firsts = [p.first for p in periods]
    at = None if None in firsts else max((f for f in firsts if f is not None), default=0)
    settle = None if at is None else at / TOKEN_TIMEOUT
    return seed, found, regress, settle, worst / TOKEN_TIMEOUT, network_class(run)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-2000")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--mild", action="store_true", help="only the runs with loss <= 20%%")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if args.mild:
        seeds = [s for s in seeds if mild(hostile_run(s))]
    t0 = time.monotonic()
    by_prop: Counter[str] = Counter()
    failing: dict[str, list[int]] = {}
    regress_runs = 0
    runs: Counter[str] = Counter()
    settle_times: dict[str, list[float]] = {c: [] for c in CLASSES}
    worst_periods: dict[str, list[float]] = {c: [] for c in CLASSES}
    late: dict[str, list[int]] = {c: [] for c in CLASSES}  # a period beyond the bound
    never: dict[str, list[int]] = {c: [] for c in CLASSES}  # not settled in the quiet end
    with ProcessPoolExecutor(args.jobs) as pool:
        results = pool.map(one, seeds, chunksize=8)
        for k, (seed, found, regress, settle, worst, cls) in enumerate(results):
            for prop, lst in found.items():
                by_prop[prop] += 1
                failing.setdefault(prop, []).append(seed)
                print(f"seed {seed}: {prop}: {lst[0]} ({len(lst)} in all)", flush=True)
            regress_runs += bool(regress)
            runs[cls] += 1
            worst_periods[cls].append(worst)
            if settle is None:
                never[cls].append(seed)
            else:
                settle_times[cls].append(settle)
                if worst > BOUND:
                    late[cls].append(seed)
            if worst > BOUND:
                print(
                    f"seed {seed}: unsettled for {worst:.1f} token timeouts"
                    f"{'' if settle is not None else ', never settled'} ({cls})",
                    flush=True,
                )
            if k and k % 200 == 0:
                print(f"... {k}/{len(seeds)}", file=sys.stderr, flush=True)
    took = time.monotonic() - t0
    bad = sorted({s for lst in failing.values() for s in lst})
    print(f"{len(seeds)} hostile runs in {took:.0f}s: {len(bad)} with a safety violation")
    for prop in ("view_agreement", "total_order", "mutual_exclusion", "invariant"):
        print(f"  {prop}: {by_prop[prop]} runs {failing.get(prop, [])[:20]}")
    print(f"  runs with a grant fenced below an earlier one (refused): {regress_runs}")
    print(
        f"liveness in the quiet end (token timeouts; bound {BOUND:g}):\n"
        "  network: runs / within the bound / a longer unsettled period / never settled"
        " / time to settle after the last fault: median, worst"
        " / longest unsettled period: median, worst"
    )
    for cls in CLASSES:
        if not runs[cls]:
            continue
        times = sorted(settle_times[cls])
        periods = sorted(worst_periods[cls])
        within = runs[cls] - len(late[cls]) - len(never[cls])
        med = times[len(times) // 2] if times else float("nan")
        slowest = times[-1] if times else float("nan")
        print(
            f"  {cls}: {runs[cls]} / {within} / {len(late[cls])} {late[cls][:10]}"
            f" / {len(never[cls])} {never[cls][:10]} / {med:.1f}, {slowest:.1f}"
            f" / {periods[len(periods) // 2]:.1f}, {periods[-1]:.1f}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
