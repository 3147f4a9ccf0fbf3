"""JGroups' own test scenarios and reported bugs, as bundled scenarios GMS passes."""

from __future__ import annotations

import pytest

from . import checks
from .harness import run

MS = 1_000_000
MERGE_INTERVAL = 500 * MS  # the default discovery interval


def _key(view_id: str) -> tuple[int, str]:
    coord, _, n = view_id.rpartition(":")
    return (int(n), coord)


def _merges(rows: list[dict]) -> list[dict]:
    return checks.records(rows, "merge")


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize("name", ["leave_coord_and_next", "leave_next_and_coord"])
def test_coordinator_and_next_in_line_leave_at_once(name: str, mode: str) -> None:
    rows = run(name, mode)
    assert checks.safety(rows) == []
    survivors = set("CDEFGHIJ")
    assert checks.convergence(rows, survivors) == []
    final = checks.last_views(rows)["C"]
    assert final[1][0] == "C"  # the third member is the coordinator
    assert {r["node"] for r in checks.records(rows, "leader") if r["view"] == final[0]} == (
        survivors
    )


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize(
    ("name", "n", "parts"),
    [("split_4_into_2", 4, 2), ("split_8_into_4", 8, 4), ("merge_10_in_4", 10, 4)],
)
def test_partitions_merge_into_exactly_one_view(name: str, n: int, parts: int, mode: str) -> None:
    rows = run(name, mode)
    assert checks.safety(rows) == []
    nodes = {chr(ord("A") + i) for i in range(n)}
    assert checks.convergence(rows, nodes) == []
    (merge,) = _merges(rows)  # one merge view, never a partial one
    groups = merge["detail"]["subgroups"]
    assert len(groups) == parts
    assert sorted(m for g in groups for m in g["members"]) == sorted(nodes)
    heal = max(r["t"] for r in rows if r["kind"] == "fault" and r["detail"]["action"] == "heal")
    final_id = checks.last_views(rows)["A"][0]
    installed = max(r["t"] for r in checks.records(rows, "view") if r["view"] == final_id)
    assert installed - heal <= 3 * MERGE_INTERVAL
    assert all(_key(final_id) > _key(g["view"]) for g in groups)  # greater than every subgroup's


def test_fifty_singletons_merge_into_one_view() -> None:
    rows = run("merge_50_singletons", "two_phase")
    assert checks.safety(rows) == []
    nodes = {f"n{i:02d}" for i in range(50)}
    assert checks.convergence(rows, nodes) == []
    (merge,) = _merges(rows)
    assert len(merge["detail"]["subgroups"]) == 50


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
def test_jgrp_2092_three_members_three_coordinators(mode: str) -> None:
    rows = run("coords_disagree", mode)
    first = {r["node"]: r["members"][0] for r in checks.records(rows, "view") if r["t"] == 0}
    assert first == {"A": "B", "B": "C", "C": "A"}  # nobody coordinates its own view
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"A", "B", "C"}) == []


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize(("name", "n"), [("asymmetric_1031", 3), ("asymmetric_1061", 5)])
def test_asymmetric_partitions_heal(name: str, n: int, mode: str) -> None:
    rows = run(name, mode)
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {chr(ord("A") + i) for i in range(n)}) == []


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize(
    ("name", "live"),
    [("views_overtaking_1496", set("ABCDEF")), ("older_view_3036", set("ACDEF"))],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_older_view_after_a_newer_one(name: str, live: set[str], mode: str, seed: int) -> None:
    rows = run(name, mode, seed=seed)
    assert checks.safety(rows) == []
    assert checks.convergence(rows, live) == []
    per_node: dict[str, list[tuple[int, str]]] = {}
    for r in checks.records(rows, "view"):
        per_node.setdefault(r["node"], []).append(_key(r["view"]))
    for node, keys in per_node.items():
        assert keys == sorted(set(keys)), f"{node} installed views out of order: {keys}"
