"""The parameter grid: resizing keeps a scenario's faults meaningful, and worked examples
that declare themselves fixed run only as they are."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ringcast.lab.grid import apply_point, is_fixed, parse_sweep
from ringcast.sim import Simulation, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

PARTITION = """
name = "p"
protocol = "raincore"
nodes = ["A", "B", "C", "D", "E"]
duration = "3s"

[[nemesis]]
at = "1s"
action = "partition"
groups = [["A", "B"], ["C", "D", "E"]]

[[nemesis]]
at = "2s"
action = "heal"
"""


def test_growing_a_partition_adds_the_new_nodes_to_the_largest_group() -> None:
    doc = tomllib.loads(PARTITION)
    grown = apply_point(doc, {"nodes": 7})
    assert grown["nodes"] == list("ABCDEFG")
    assert grown["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E", "F", "G"]]
    assert grown["nemesis"][1] == {"at": "2s", "action": "heal"}
    # the document itself is untouched, and the grown one is a valid scenario
    assert doc["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E"]]
    sc = parse_scenario(grown, "p.toml")
    assert len(sc.nodes) == 7


def test_growing_a_tied_partition_fills_the_last_group() -> None:
    doc = tomllib.loads(PARTITION.replace('[["A", "B"], ["C", "D", "E"]]', '[["A"], ["B"]]'))
    doc["nodes"] = ["A", "B"]
    assert apply_point(doc, {"nodes": 4})["nemesis"][0]["groups"] == [["A"], ["B", "C", "D"]]


def test_same_size_and_shrinking_leave_partition_groups_alone() -> None:
    doc = tomllib.loads(PARTITION)
    assert apply_point(doc, {"nodes": 5}) == doc
    assert apply_point(doc, {"nodes": 3})["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E"]]


def test_grown_partition_heal_keeps_a_majority_side_that_commits() -> None:
    # 2|3 of five grown to six: 2|4, the majority side commits during the partition
    # (before: 2|3|1, no side had a majority and nobody committed until the heal)
    doc = tomllib.loads((SCENARIOS / "raincore" / "partition_heal.toml").read_text())
    sc = parse_scenario(apply_point(doc, {"nodes": 6}), "partition_heal.toml")
    rows = Simulation(sc, seed=1).run().events(kind="view")
    cut, heal = 1_000_000_000, 2_000_000_000
    during = {r["node"]: tuple(r["members"]) for r in rows if cut < r["t"] < heal}
    assert during == dict.fromkeys("CDEF", ("C", "D", "E", "F"))


def test_fixed_is_a_scenario_key() -> None:
    for name in ("fig12_no_failure", "fig13_crash", "fig14_recovery"):
        doc = tomllib.loads((SCENARIOS / "raincore" / f"{name}.toml").read_text())
        assert is_fixed(doc), name
    assert not is_fixed(tomllib.loads((SCENARIOS / "raincore" / "crash.toml").read_text()))


def test_fixed_scenarios_run_only_at_points_that_leave_them_unchanged() -> None:
    sweep = parse_sweep(
        {
            "scenarios": ["scenarios/raincore/fig1*.toml", "scenarios/raincore/crash.toml"],
            "seeds": 2,
            "grid": {"nodes": ["as_is", 3, 4, 6], "network.loss": [0.0, 0.02]},
        },
        base=ROOT,
    )
    points = {(r.scenario, r.point) for r in sweep.runs}
    for fig in ("fig12_no_failure", "fig13_crash", "fig14_recovery"):
        # as is, and its own size (4) without loss: the same scenario
        assert {p for s, p in points if s == fig} == {
            "nodes=as_is,network.loss=0.0",
            "nodes=4,network.loss=0.0",
        }
    assert len([p for s, p in points if s == "raincore_crash"]) == 8
    fixed_skips = [s for s in sweep.skipped if "fixed = true" in s]
    assert len(fixed_skips) == 3 * 6
    assert all(s.startswith("fig1") for s in fixed_skips)


def test_fixed_scenarios_keep_their_exact_runs() -> None:
    # the default sweep's fig13 point is the figure itself: B is gone from the final view
    sweep = parse_sweep(
        {"scenarios": ["scenarios/raincore/fig13_crash.toml"], "grid": {"nodes": ["as_is", 6]}},
        base=ROOT,
    )
    (run,) = sweep.runs
    sc = parse_scenario(sweep.documents[run.scenario_index], "fig13_crash.toml")
    views = Simulation(sc, seed=run.seed).run().events(kind="view")
    last = {r["node"]: tuple(r["members"]) for r in views}
    assert last == {
        "A": ("A", "C", "D"),
        "B": ("A", "B", "C", "D"),
        **dict.fromkeys("CD", ("A", "C", "D")),
    }


def test_a_generator_sweep_draws_one_scenario_per_protocol_and_seed() -> None:
    from ringcast.lab.errors import LabError

    doc = {"protocols": ["raincore", "totem", "nope"], "seeds": 2, "generator": {"kind": "hostile"}}
    sweep = parse_sweep(doc, "hostile.toml")
    assert [(r.protocol, r.seed) for r in sweep.runs] == [
        ("raincore", 1),
        ("raincore", 2),
        ("totem", 1),
        ("totem", 2),
    ]
    assert any("nope" in s for s in sweep.skipped)
    for r in sweep.runs:  # every generated document is a valid scenario of its protocol
        assert parse_scenario(sweep.documents[r.scenario_index]).protocol == r.protocol
    # the same seed draws the same scenario
    assert parse_sweep(doc, "again.toml").documents == sweep.documents
    for bad, msg in (
        ({"seeds": 1, "generator": {"kind": "hostile"}}, "protocols"),
        ({"protocols": ["totem"], "generator": {"kind": "gentle"}}, "kind"),
        ({"protocols": ["totem"], "generator": {"kind": "hostile", "x": 1}}, "unknown key"),
    ):
        with pytest.raises(LabError, match=msg):
            parse_sweep(bad, "bad.toml")
