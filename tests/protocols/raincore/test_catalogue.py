"""The bundled fault catalogue: each scenario runs and keeps Raincore's properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.lab import reference as checks
from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "raincore"
CATALOGUE = ["crash", "restart", "join", "partition_heal", "lossy", "lock_contention"]


def run(name: str) -> tuple[object, list[dict]]:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    res = Simulation(sc, seed=7).run()
    return sc, res.events()


@pytest.mark.parametrize("name", CATALOGUE)
def test_catalogue_scenario_keeps_the_properties(name: str) -> None:
    sc, rows = run(name)
    faults = sorted({r["t"] for r in rows if r["kind"] == "fault"})
    windows = [(t, t + 1_000_000_000) for t in faults]
    live = set(sc.all_nodes) - ({"C"} if name == "crash" else set())
    assert checks.invariants(rows) == []
    assert checks.view_agreement(rows) == []
    assert checks.single_token(rows, sc.duration, windows) == []
    assert checks.mutual_exclusion(rows, sc.duration) == []
    assert checks.total_order(rows) == []
    assert checks.convergence(rows, live, on_members=True, keep_across_restart=True) == []
    assert [r for r in rows if r["kind"] == "deliver"], "the workload was delivered"


def test_partition_minority_never_commits_while_cut_off() -> None:
    _, rows = run("partition_heal")
    cut, heal = 1_000_000_000, 2_000_000_000
    minority_views = [
        r for r in rows if r["kind"] == "view" and r["node"] in "AB" and cut < r["t"] < heal
    ]
    assert minority_views == []
    majority = {
        r["node"]: tuple(r["members"]) for r in rows if r["kind"] == "view" and cut < r["t"] < heal
    }
    assert majority == dict.fromkeys("CDE", ("C", "D", "E"))


def test_lock_contention_grants_every_node() -> None:
    _, rows = run("lock_contention")
    granted = {r["node"] for r in rows if r["kind"] == "lock" and r["detail"]["op"] == "granted"}
    assert granted == set("ABCDE")
