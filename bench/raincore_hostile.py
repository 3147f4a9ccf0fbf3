"""Raincore soak under the shared hostile generator (``ringcast.sim.hostile``).

python bench/raincore_hostile.py --seeds 0-2000          # safety violations by property
python bench/raincore_hostile.py --seeds 0-2000 --jobs 2
python bench/raincore_hostile.py --seeds 0-2000 --mild   # only loss <= 20%, no asymmetric link

Each seed is one hostile run (3-8 nodes, 5-30% loss, duplication, reordering,
asymmetric links, 2-7 overlapping crashes, restarts, pauses, two- and three-way and
flapping partitions); the checks are view agreement, total order, mutual exclusion
with fencing (overlapping holders must hold different fences) and the machine's own
invariant rows. Also counted: grants whose fence is below an earlier one (the
documented limit, which a fencing resource refuses) and liveness: how long after the
last fault the live nodes were first all in Agreement on one view of exactly
themselves, in token timeouts, against the bound of docs/protocols/raincore.md
(10 token timeouts; the run's quiet end is 12), by class of network (loss and
asymmetric links).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.raincore import checks
from tests.protocols.raincore.hostile import TOKEN_TIMEOUT, hostile_run, safety
from tests.protocols.soakrun import parse_seeds

from ringcast.sim import Simulation
from ringcast.sim.hostile import HostileRun

BOUND = 10.0
"""Token timeouts from the last fault to a settled group ("Liveness under sustained
loss" in docs/protocols/raincore.md)."""


def mild(run: HostileRun) -> bool:
    """Loss of at most 20% and no asymmetric link: where issue 24 requires convergence."""
    return run.scenario.network.loss <= 0.2 and not run.scenario.network.links


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


def one(seed: int) -> tuple[int, dict[str, list[str]], int, float | None, str]:
    """Safety violations, fence regressions, token timeouts to settle (None: not in
    the quiet end) and the network class of one run."""
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    found = safety(rows, run.scenario.duration)
    regress = len(checks.fence_regressions(rows))
    end = run.scenario.duration
    at = checks.settled_at(rows, set(run.live), run.quiet_from, end)
    settle = None if at is None else (at - run.quiet_from) / TOKEN_TIMEOUT
    return seed, found, regress, settle, network_class(run)


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
    late: dict[str, list[int]] = {c: [] for c in CLASSES}  # settled after the bound
    never: dict[str, list[int]] = {c: [] for c in CLASSES}  # not in the quiet end
    with ProcessPoolExecutor(args.jobs) as pool:
        for k, (seed, found, regress, settle, cls) in enumerate(pool.map(one, seeds, chunksize=8)):
            for prop, lst in found.items():
                by_prop[prop] += 1
                failing.setdefault(prop, []).append(seed)
                print(f"seed {seed}: {prop}: {lst[0]} ({len(lst)} in all)", flush=True)
            regress_runs += bool(regress)
            runs[cls] += 1
            if settle is None:
                never[cls].append(seed)
            else:
                settle_times[cls].append(settle)
                if settle > BOUND:
                    late[cls].append(seed)
            if settle is None or settle > BOUND:
                print(f"seed {seed}: not settled within the bound ({cls})", flush=True)
            if k and k % 200 == 0:
                print(f"... {k}/{len(seeds)}", file=sys.stderr, flush=True)
    took = time.monotonic() - t0
    bad = sorted({s for lst in failing.values() for s in lst})
    print(f"{len(seeds)} hostile runs in {took:.0f}s: {len(bad)} with a safety violation")
    for prop in ("view_agreement", "total_order", "mutual_exclusion", "invariant"):
        print(f"  {prop}: {by_prop[prop]} runs {failing.get(prop, [])[:20]}")
    print(f"  runs with a grant fenced below an earlier one (refused): {regress_runs}")
    print(
        f"liveness (token timeouts from the last fault to settled; bound {BOUND:g}):\n"
        "  network: runs / settled within the bound / later / never in the quiet end"
        " / median, worst settled"
    )
    for cls in CLASSES:
        times = sorted(settle_times[cls])
        if not runs[cls]:
            continue
        within = len(times) - len(late[cls])
        med = times[len(times) // 2] if times else float("nan")
        worst = times[-1] if times else float("nan")
        print(
            f"  {cls}: {runs[cls]} / {within} / {len(late[cls])} {late[cls][:10]}"
            f" / {len(never[cls])} {never[cls][:10]} / {med:.1f}, {worst:.1f}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
