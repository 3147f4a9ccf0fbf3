"""Raincore against the shared hostile generator (``ringcast.sim.hostile``): a small
deterministic sample of the soak of ``bench/raincore_hostile.py`` (thousands of seeds),
with its safety checks: view agreement, total order, mutual exclusion with fencing,
no invariant row."""

from __future__ import annotations

import pytest

from ringcast.sim import Simulation

from . import checks
from .hostile import hostile_run, safety

SAMPLE = range(30)


@pytest.mark.parametrize("seed", SAMPLE)
def test_hostile_run_keeps_raincore_safe(seed: int) -> None:
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    assert safety(rows, run.scenario.duration) == {}
    assert any(r["kind"] == "fault" for r in rows)
    # Every grant carries a fence, and no fence is granted twice.
    grants = [r for r in rows if r["kind"] == "lock" and r["detail"].get("op") == "granted"]
    assert all(int(r["detail"]["fence"]) > 0 for r in grants)


def test_the_sample_is_hostile() -> None:
    runs = [hostile_run(seed) for seed in SAMPLE]
    actions = {a.action for run in runs for a in run.scenario.nemesis}
    assert {"crash", "restart", "pause", "partition", "heal"} <= actions
    assert max(run.scenario.network.loss for run in runs) > 0.25
    assert {len(run.scenario.nodes) for run in runs} >= {3, 8}
    assert checks.fenced_mutual_exclusion([], 0) == []
