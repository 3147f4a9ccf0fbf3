"""Raincore soak under the shared hostile generator (``ringcast.sim.hostile``).

python bench/raincore_hostile.py --seeds 0-2000          # safety violations by property
python bench/raincore_hostile.py --seeds 0-2000 --jobs 2

Each seed is one hostile run (3-8 nodes, 5-30% loss, duplication, reordering,
asymmetric links, 2-7 overlapping crashes, restarts, pauses, two- and three-way and
flapping partitions); the checks are view agreement, total order, mutual exclusion
with fencing (overlapping holders must hold different fences) and the machine's own
invariant rows. Also counted: grants whose fence is below an earlier one (the
documented limit, which a fencing resource refuses) and runs whose live nodes were
never, in the quiet end of the run (12 token timeouts after the last fault), all in
Agreement on one view of exactly themselves.
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
from tests.protocols.raincore.hostile import hostile_run, safety
from tests.protocols.soakrun import parse_seeds

from ringcast.sim import Simulation


def one(seed: int) -> tuple[int, dict[str, list[str]], int, bool, int]:
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    found = safety(rows, run.scenario.duration)
    regress = len(checks.fence_regressions(rows))
    end = run.scenario.duration
    converged = checks.settled_at(rows, set(run.live), run.quiet_from, end) is not None
    mild = run.scenario.network.loss <= 0.2 and not run.scenario.network.links
    return seed, found, regress, converged, mild


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-2000")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    t0 = time.monotonic()
    by_prop: Counter[str] = Counter()
    failing: dict[str, list[int]] = {}
    regress_runs = 0
    unconverged: list[int] = []
    mild_runs = 0
    mild_unconverged: list[int] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for k, (seed, found, regress, converged, mild) in enumerate(
            pool.map(one, seeds, chunksize=8)
        ):
            for prop, lst in found.items():
                by_prop[prop] += 1
                failing.setdefault(prop, []).append(seed)
                print(f"seed {seed}: {prop}: {lst[0]} ({len(lst)} in all)", flush=True)
            regress_runs += bool(regress)
            mild_runs += mild
            if not converged:
                unconverged.append(seed)
                if mild:
                    mild_unconverged.append(seed)
            if k and k % 200 == 0:
                print(f"... {k}/{len(seeds)}", file=sys.stderr, flush=True)
    took = time.monotonic() - t0
    bad = sorted({s for lst in failing.values() for s in lst})
    print(f"{len(seeds)} hostile runs in {took:.0f}s: {len(bad)} with a safety violation")
    for prop in ("view_agreement", "total_order", "mutual_exclusion", "invariant"):
        print(f"  {prop}: {by_prop[prop]} runs {failing.get(prop, [])[:20]}")
    print(f"  runs with a grant fenced below an earlier one (refused): {regress_runs}")
    print(f"  runs not settled in the quiet end: {len(unconverged)} {unconverged[:20]}")
    print(
        f"  of the {mild_runs} runs with loss <= 20% and no asymmetric link: "
        f"{len(mild_unconverged)} {mild_unconverged[:20]}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
