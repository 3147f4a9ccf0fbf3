"""Every family's liveness under the hostile generator, without Spark: convergence and
delivery_progress as the lab defines them (``ringcast.lab.liveness``), per seed.

Each seed is one run of ``ringcast.sim.hostile`` at its defaults (3-8 nodes, 5-30% loss,
duplication, reordering, asymmetric links, 2-7 overlapping crashes, restarts, pauses,
two- and three-way and flapping partitions, a quiet end of 12 failure-detection
timeouts), the family at its default settings, the faults scaled by the family's
failure-detection timeout (its registration's ``timeout``). Per family: the runs that
miss convergence (an unsettled period after the last fault longer than ``--bound``
timeouts) and delivery_progress (a live node with messages of its own pending and no
delivery in the last second of the run), whether the family claims them or not, with
the seeds; ``--jsonl FILE`` writes one line a miss (what the run drew and the
property's note) for classifying them. ``--safety`` checks the same runs for
merge_atomicity and the safety every family claims (``ringcast.lab.reference``: no
invariant row, view and leader agreement, integrity, FIFO), so one pass gives the
whole table.

    python bench/liveness_hostile.py --protocols gms,basic --seeds 1-500 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.protocols.soakrun import parse_seeds

from ringcast.lab import reference
from ringcast.lab.liveness import (
    DEFAULT_BOUND,
    components,
    convergence,
    delivery_progress,
    settling,
)
from ringcast.protocols import registry
from ringcast.sim import Simulation
from ringcast.sim.hostile import hostile_scenario

PROPS = ("convergence", "delivery_progress", "unsettled_at_end")
"""``unsettled_at_end``: the lab's measure of convergence before it had one definition
for every family (some live node not in the one configuration of its component when the
run stops, whatever happened before), for the before/after table."""
SAFETY = ("merge_atomicity", "safety")


def one(
    protocol: str, seed: int, bound: float, safety: bool = False, timeout: int | None = None
) -> dict[str, Any]:
    """One run; ``timeout`` (ns), when given, replaces the family's failure-detection
    timeout as the generator's scale and the bound's unit (to compare two versions whose
    defaults differ on the same terms)."""
    spec = registry.get(protocol)
    timeout = timeout or spec.timeout_ns({})
    assert timeout is not None, f"{protocol} exposes no failure-detection timeout"
    run = hostile_scenario(seed, protocol, token_timeout=timeout)
    rows = Simulation(run.scenario, seed=seed).run().events()
    end = run.scenario.duration
    net = run.scenario.network
    found = {
        "convergence": convergence(
            rows,
            run.live,
            timeout,
            bound=bound,
            end=end,
            on_members=spec.converge_on == "members",
        ),
        "delivery_progress": delivery_progress(rows, end=end),
        "unsettled_at_end": [
            "+".join(sorted(c))
            for c in components(rows, run.live)
            if not settling(
                rows, c, run.quiet_from, end, on_members=spec.converge_on == "members"
            ).at_end
        ],
    }
    if safety:
        found["merge_atomicity"] = reference.merge_atomicity(rows)
        found["safety"] = reference.safety(rows)
    return {
        "protocol": protocol,
        "seed": seed,
        "nodes": len(run.scenario.nodes),
        "loss": net.loss,
        "worst_link": max([net.loss, *(lk.loss for lk in net.links if lk.loss is not None)]),
        "episodes": list(run.episodes),
        "quiet_from_ms": run.quiet_from // 1_000_000,
        "end_ms": end // 1_000_000,
        "missed": {p: v for p, v in found.items() if v},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocols", default=",".join(registry.builtin_names()))
    ap.add_argument("--seeds", default="1-500")
    ap.add_argument("--bound", type=float, default=DEFAULT_BOUND, help="timeouts")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--jsonl", type=Path, help="one line a run that misses something")
    ap.add_argument("--safety", action="store_true", help="merge_atomicity and safety too")
    ap.add_argument(
        "--timeout",
        type=float,
        help="ms: the generator's scale and the bound's unit instead of the family's timeout",
    )
    a = ap.parse_args()
    seeds = parse_seeds(a.seeds)
    out = a.jsonl.open("w") if a.jsonl else None
    with ProcessPoolExecutor(a.jobs) as pool:
        for protocol in a.protocols.split(","):
            claims = registry.get(protocol).claims
            t0 = time.monotonic()
            props = PROPS + SAFETY if a.safety else PROPS
            missed: dict[str, list[int]] = {p: [] for p in props}
            n = len(seeds)
            timeout = int(a.timeout * 1_000_000) if a.timeout else None
            runs = pool.map(
                one,
                [protocol] * n,
                seeds,
                [a.bound] * n,
                [a.safety] * n,
                [timeout] * n,
                chunksize=4,
            )
            for k, r in enumerate(runs, start=1):
                for p in r["missed"]:
                    missed[p].append(r["seed"])
                if k % 25 == 0:
                    so_far = {p: len(v) for p, v in missed.items()}
                    print(f"... {protocol} {k}/{n}: {so_far}", file=sys.stderr, flush=True)
                if r["missed"] and out is not None:
                    out.write(json.dumps(r) + "\n")
                    out.flush()
            took = time.monotonic() - t0
            parts = []
            for p in props:
                tag = "" if p in claims or p in (PROPS[2], "safety") else " (not claimed)"
                parts.append(f"{p}{tag} missed {len(missed[p])}")
            print(f"{protocol}: {n} runs in {took:.0f} s; " + ", ".join(parts), flush=True)
            for p in props:
                if missed[p]:
                    print(f"  {p} seeds: {missed[p][:60]}", flush=True)
    if out is not None:
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
