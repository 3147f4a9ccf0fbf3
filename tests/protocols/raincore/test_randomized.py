"""200 seeded random runs: crashes, restarts with kept state, partitions and heals,
message loss and duplication, under a multicast and a lock workload."""

from __future__ import annotations

import pytest

from ringcast.lab import reference as checks
from ringcast.sim import Simulation

from .randomized import random_scenario

SEEDS = range(200)
# Seeds beyond the suite's range that once failed (found by soak.py; see "Soak findings"
# in docs/protocols/raincore.md): 253 and 718 regenerated a minority ring, 984 broke
# mutual exclusion.
EXTRA_SEEDS = (253, 718, 984)


@pytest.mark.parametrize("seed", [*SEEDS, *EXTRA_SEEDS])
def test_random_run_keeps_raincore_properties(seed: int) -> None:
    sc, windows, live = random_scenario(seed)
    rows = Simulation(sc, seed=seed).run().events()
    problems = {
        "invariant": checks.invariants(rows),
        "view_agreement": checks.view_agreement(rows),
        "single_token": checks.single_token(rows, sc.duration, windows),
        "mutual_exclusion": checks.mutual_exclusion(rows, sc.duration),
        "total_order": checks.total_order(rows),
        "convergence": checks.convergence(rows, live, on_members=True, keep_across_restart=True),
    }
    assert {k: v[:3] for k, v in problems.items() if v} == {}
    assert any(r["kind"] == "deliver" for r in rows)
    assert any(r["kind"] == "fault" for r in rows)
