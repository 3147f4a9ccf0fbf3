"""Raincore under the shared hostile generator (``ringcast.sim.hostile``): its settings
and the safety checks of one run. Used by ``test_hostile.py`` (a small sample) and by
``bench/raincore_hostile.py`` (the soak over thousands of seeds)."""

from __future__ import annotations

from typing import Any

from ringcast.core.units import MS
from ringcast.lab import reference as checks
from ringcast.sim import Simulation
from ringcast.sim.hostile import HostileRun, hostile_scenario

TOKEN_TIMEOUT = 120 * MS
"""Raincore's token timeout is ``hungry_timeout``."""

SETTLE_BOUND = 10 * TOKEN_TIMEOUT
"""Every unsettled period ends within 10 token timeouts ("Liveness under sustained
loss" in docs/protocols/raincore.md)."""

SETTINGS: dict[str, Any] = {
    "eating_timeout": "2ms",
    "hungry_timeout": "120ms",
    "starving_timeout": "40ms",
    "rto": "4ms",
    "max_tries": 4,
    "lock_max_hold": "5ms",
    "max_token_messages": 32,
}


def hostile_run(seed: int, **kw: Any) -> HostileRun:
    return hostile_scenario(seed, "raincore", token_timeout=TOKEN_TIMEOUT, settings=SETTINGS, **kw)


def mild(run: HostileRun) -> bool:
    """Loss of at most 20% and no asymmetric link: where the hostile soak requires convergence."""
    return run.scenario.network.loss <= 0.2 and not run.scenario.network.links


def liveness(rows: list[dict[str, Any]], run: HostileRun) -> tuple[int | None, int]:
    """(the time from the last fault until the live nodes are settled -- all in
    Agreement on one view of exactly themselves -- or None if they never are; the
    longest unsettled period from the last fault on, a period open at the end counted
    with its length so far), in ns. The loss goes on after the last fault, so a false
    failure-on-delivery may unsettle the group again: the bound is per period."""
    end, quiet, live = run.scenario.duration, run.quiet_from, set(run.live)
    at = checks.settled_at(rows, live, quiet, end)
    spans = checks.unsettled_spans(rows, live, end)
    worst = max((b - max(a, quiet) for a, b in spans if b > quiet), default=0)
    return (None if at is None else at - quiet), worst


def safety(rows: list[dict[str, Any]], end_t: int) -> dict[str, list[str]]:
    """The safety properties of one run, by name: only violations are listed."""
    found = {
        "invariant": checks.invariants(rows),
        "view_agreement": checks.view_agreement(rows),
        "total_order": checks.total_order(rows),
        "mutual_exclusion": checks.fenced_mutual_exclusion(rows, end_t),
    }
    return {k: v for k, v in found.items() if v}


def problems(seed: int) -> dict[str, list[str]]:
    run = hostile_run(seed)
    rows = Simulation(run.scenario, seed=seed).run().events()
    return safety(rows, run.scenario.duration)
