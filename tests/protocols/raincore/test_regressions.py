"""The smallest failing runs of issue 24, bundled as ``scenarios/raincore/regress_*.toml``
and run with their own seed: each failed on the code before the fix (the property
listed with it), and keeps every safety property now."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.sim import Simulation, load_scenario

from .hostile import safety

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "raincore"
REGRESSIONS = {
    # file: the property that failed before the fix
    "regress_split_brain_1of2": "view_agreement",
    "regress_total_order_heal": "total_order",
    "regress_exactly_half_lock": "mutual_exclusion",
}


def test_every_bundled_regression_is_listed() -> None:
    assert {p.stem for p in SCENARIOS.glob("regress_*.toml")} == set(REGRESSIONS)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_scenario_keeps_raincore_safe(name: str) -> None:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    assert safety(rows, sc.duration) == {}
    assert [r for r in rows if r["kind"] == "deliver"]


def test_split_brain_scenario_commits_one_membership_per_index() -> None:
    sc = load_scenario(SCENARIOS / "regress_split_brain_1of2.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    by_index: dict[int, set[tuple[str, ...]]] = {}
    for r in rows:
        if r["kind"] == "view":
            by_index.setdefault(int(r["view"]), set()).add(tuple(r["members"]))
    assert all(len(m) == 1 for m in by_index.values()), by_index
    # the two-member ring (C, B) of the old run was committed without A's signature
    assert ("C", "B") not in {m for ms in by_index.values() for m in ms}
