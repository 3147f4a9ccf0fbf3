"""Raincore against the shared hostile generator (``ringcast.sim.hostile``): a small
deterministic sample of the soak of ``bench/raincore_hostile.py`` (thousands of seeds),
with its safety checks: view agreement, total order, mutual exclusion with fencing,
no invariant row; and liveness where the soak requires it (at most 20% loss, no
asymmetric link): settled within the bound after the last fault, and every later
unsettled period within it too."""

from __future__ import annotations

import pytest

from ringcast.lab import reference as checks
from ringcast.sim import Simulation
from ringcast.sim.hostile import HostileRun

from .hostile import SETTLE_BOUND, TOKEN_TIMEOUT, hostile_run, liveness, mild, safety

SAMPLE = range(30)
UNSETTLED_BEFORE_DECISION_26 = (75, 117, 353, 1726, 1803, 1966)
"""Runs at most 20% loss, no asymmetric link, of 5-7 nodes whose live nodes all starved
for ever before decision 26 (a 911 seeks its voters in the whole universe)."""


@pytest.mark.parametrize("seed", SAMPLE)
def test_hostile_run_keeps_raincore_safe(seed: int) -> None:
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    assert safety(rows, run.scenario.duration) == {}
    assert any(r["kind"] == "fault" for r in rows)
    # Every grant carries a fence, and no fence is granted twice.
    grants = [r for r in rows if r["kind"] == "lock" and r["detail"].get("op") == "granted"]
    assert all(int(r["detail"]["fence"]) > 0 for r in grants)
    if mild(run):
        _assert_settles(rows, run)


@pytest.mark.parametrize("seed", UNSETTLED_BEFORE_DECISION_26)
def test_hostile_run_at_mild_loss_settles_within_the_bound(seed: int) -> None:
    run = hostile_run(seed)
    assert mild(run)
    rows = Simulation(run.scenario, seed=seed).run().events()
    assert safety(rows, run.scenario.duration) == {}
    _assert_settles(rows, run)


def _assert_settles(rows: list[dict], run: HostileRun) -> None:
    settle, worst = liveness(rows, run)
    assert settle is not None, f"live nodes {sorted(run.live)} never settled"
    assert settle <= SETTLE_BOUND and worst <= SETTLE_BOUND, (
        f"settled {settle / TOKEN_TIMEOUT:.1f}, longest unsettled period"
        f" {worst / TOKEN_TIMEOUT:.1f} token timeouts after the last fault"
    )


def test_the_sample_is_hostile() -> None:
    runs = [hostile_run(seed) for seed in SAMPLE]
    actions = {a.action for run in runs for a in run.scenario.nemesis}
    assert {"crash", "restart", "pause", "partition", "heal"} <= actions
    assert max(run.scenario.network.loss for run in runs) > 0.25
    assert {len(run.scenario.nodes) for run in runs} >= {3, 8}
    assert checks.fenced_mutual_exclusion([], 0) == []
