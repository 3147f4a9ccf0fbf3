"""JGroups' own test scenarios and reported bugs, as bundled scenarios GMS passes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ringcast.lab import reference as checks
from ringcast.layers import HeartbeatDetector, Stack
from ringcast.protocols import registry
from ringcast.protocols.gms import SPEC, GmsMachine
from ringcast.sim import Simulation, load_scenario

from .harness import JGROUPS, run

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
@pytest.mark.parametrize(
    ("name", "n", "deaf", "unheard"),
    [("asymmetric_1031", 3, "BC", "A"), ("asymmetric_1061", 5, "DE", "AB")],
)
def test_asymmetric_partitions_heal(name: str, n: int, deaf: str, unheard: str, mode: str) -> None:
    """The one-way cut shows: the nodes that stop hearing ``unheard`` install a view
    without them while the cut lasts; one merge of all subgroups, which they install
    after the heal."""
    rows = run(name, mode)
    assert checks.safety(rows) == []
    assert checks.merge_atomicity(rows) == []
    assert checks.convergence(rows, {chr(ord("A") + i) for i in range(n)}) == []
    faults = {r["detail"]["action"]: r["t"] for r in rows if r["kind"] == "fault"}
    for node in deaf:
        during = [
            r["members"]
            for r in checks.records(rows, "view", node)
            if faults["cut"] < r["t"] < faults["heal"]
        ]
        assert during and not set(unheard) & set(during[-1]), (node, during)
    (merge,) = checks.records(rows, "merge")
    # decided while the cut lasts (the leader hears everyone) or after; the deaf nodes
    # install it once the heal lets them hear its leader
    cast = [r for r in checks.records(rows, "cast_view", merge["node"]) if r["t"] == merge["t"]]
    installed = {
        r["node"]: r["t"] for r in rows if r["kind"] == "view" and r["view"] == cast[0]["view"]
    }
    assert cast and all(installed[node] > faults["heal"] for node in deaf)
    assert sorted(m for g in merge["detail"]["subgroups"] for m in g["members"]) == [
        chr(ord("A") + i) for i in range(n)
    ]


OVERTAKING = [("views_overtaking_1496", set("ABCDEF")), ("older_view_3036", set("ACDEF"))]


def _out_of_order(rows: list[dict]) -> dict[str, list[tuple[int, str]]]:
    """Per node, its installed view ids when they are not strictly increasing."""
    per_node: dict[str, list[tuple[int, str]]] = {}
    for r in checks.records(rows, "view"):
        per_node.setdefault(r["node"], []).append(_key(r["view"]))
    return {n: keys for n, keys in per_node.items() if keys != sorted(set(keys))}


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize(("name", "live"), OVERTAKING)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_older_view_after_a_newer_one(name: str, live: set[str], mode: str, seed: int) -> None:
    """The views do overtake each other (an older view reaches a member after a newer
    one: its ``older_view`` row), and no member installs it."""
    rows = run(name, mode, seed=seed)
    assert checks.safety(rows) == []
    assert checks.convergence(rows, live) == []
    older = checks.records(rows, "older_view")
    assert older, "no view overtook another: the scenario shows nothing"
    for r in older:
        assert _key(r["view"]) < _key(r["detail"]["current"])
        installed = [v["view"] for v in checks.records(rows, "view", r["node"]) if v["t"] <= r["t"]]
        assert r["detail"]["current"] in installed
    assert _out_of_order(rows) == {}


class _InstallsOlder(GmsMachine):
    """A planted bug: a member installs whatever view reaches it that lists it, older
    than its own or not (JGRP-1496 before its fix)."""

    def _older(self, v: Any, src: str, out: list[Any]) -> None:
        super()._older(v, src, out)
        if self.view is not None and v.key < self.view.key and self.node_id in v:
            self._install(v, out)


def _register_installs_older() -> str:
    name = "gms_installs_older"
    if name not in registry.names():

        def factory(ctx: Any) -> Any:
            s = SPEC.resolve_settings(ctx.settings)
            return Stack(
                _InstallsOlder(ctx, s),
                detector=HeartbeatDetector.from_settings(ctx.node_id, ctx.peers, s),
            )

        registry.register(
            dataclasses.replace(SPEC, name=name, factory=factory, doc="installs older views")
        )
    return name


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize(("name", "live"), OVERTAKING)
def test_the_overtaking_scenarios_catch_a_member_installing_an_older_view(
    name: str, live: set[str], mode: str
) -> None:
    path = JGROUPS / f"{name}.toml"
    sc = load_scenario(path).with_settings(view_install=mode)
    buggy = dataclasses.replace(sc, protocol=_register_installs_older())
    rows = Simulation(buggy, seed=1).run().events()
    assert _out_of_order(rows)
