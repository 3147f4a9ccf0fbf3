"""Totem's redundant ring in the simulator: the rrp_* scenarios of the fault catalogue in
every replication style, and corosync 2's reported redundant-ring failures as runs that
ringcast passes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.reference import totem_check_all
from ringcast.protocols.totem.rrp import RedundantRing
from ringcast.sim import Simulation, load_scenario
from ringcast.sim.scenario import Action, Scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "totem"
MS = 1_000_000


def scenario(name: str, **settings: Any) -> Scenario:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    return sc.with_settings(**settings) if settings else sc


def run(sc: Scenario, seed: int = 1) -> Any:
    return Simulation(sc, seed=seed).run()


def regular_views(res: Any) -> set[str]:
    return {r["view"] for r in res.events(kind="view") if not r["transitional"]}


def nothing_lost(res: Any, nodes: tuple[str, ...]) -> None:
    sent = {r["msg"] for r in res.events(kind="submit")}
    assert sent
    for n in nodes:
        got = {r["msg"] for r in res.events(kind="deliver", node=n)}
        assert got == sent, f"{n} misses {len(sent - got)} messages"


def marks(res: Any, action: str) -> list[tuple[int, str, int]]:
    return [
        (r["t"], r["node"], r["detail"]["network"])
        for r in res.events(kind="fault")
        if r["detail"].get("action") == action
    ]


def layer(res: Any, node: str) -> RedundantRing:
    lay = res.machines[node].layer(RedundantRing)
    assert lay is not None
    return lay


def single_ring_holds(res: Any, sc: Scenario) -> None:
    """The single ring's guarantees: every property, one configuration, no loss."""
    assert totem_check_all(res.events(), set(sc.nodes)) == []
    assert len(regular_views(res)) == 1  # no membership change
    nothing_lost(res, sc.nodes)


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_network_down_from_the_start(mode: str) -> None:
    sc = scenario("rrp_network_down", rrp_mode=mode)
    res = run(sc)
    single_ring_holds(res, sc)
    faulty = marks(res, "network_faulty")
    assert {(n, k) for _, n, k in faulty} == {(n, 1) for n in sc.nodes}
    for n in sc.nodes:
        assert layer(res, n).status()["rrp_net1"] == "faulty"
        assert layer(res, n).status()["rrp_net0"] == "healthy"


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_network_failing_under_load_is_readmitted(mode: str) -> None:
    sc = scenario("rrp_network_fails", rrp_mode=mode)
    res = run(sc)
    single_ring_holds(res, sc)
    faulty = marks(res, "network_faulty")
    healthy = marks(res, "network_healthy")
    assert {n for _, n, k in faulty if k == 0} == set(sc.nodes)
    assert all(1000 * MS <= t < 2000 * MS for t, _, _ in faulty)  # down at 1 s
    # up at 3 s: probed every second, re-admitted once a probe went round; no relapse
    assert {n for _, n, k in healthy if k == 0} == set(sc.nodes)
    assert all(3000 * MS <= t < 4200 * MS for t, _, _ in healthy)
    assert len(faulty) == len(sc.nodes)
    for n in sc.nodes:
        assert layer(res, n).status()["rrp_net0"] == "healthy"


def test_active_detects_within_ten_tokens_and_readmits_within_a_probe() -> None:
    res = run(scenario("rrp_network_fails"))  # active
    faulty = marks(res, "network_faulty")
    healthy = marks(res, "network_healthy")
    assert max(t for t, _, _ in faulty) - 1000 * MS < 200 * MS
    assert max(t for t, _, _ in healthy) - 3000 * MS < 1100 * MS


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_one_nodes_link_on_one_network(mode: str) -> None:
    sc = scenario("rrp_one_link", rrp_mode=mode)
    res = run(sc)
    single_ring_holds(res, sc)
    assert {k for _, _, k in marks(res, "network_faulty")} == {1}
    assert {n for _, n, _ in marks(res, "network_healthy")} == set(sc.nodes)
    for n in sc.nodes:
        assert not any(layer(res, n).faulty)


@pytest.mark.parametrize("mode", ["active", "passive"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lossy_network_is_marked_faulty_once_and_kept_out(mode: str, seed: int) -> None:
    sc = scenario("rrp_lossy", rrp_mode=mode)
    res = run(sc, seed)
    single_ring_holds(res, sc)
    faulty = marks(res, "network_faulty")
    assert {k for _, _, k in faulty} == {1}  # the good network is never blamed
    for n in sc.nodes:
        # once, and out for the rest of the run: a probe round of ten laps on a ring
        # that loses 30% a hop never comes back whole
        assert sum(1 for _, m, _ in faulty if m == n) == 1, f"{n} flapped"
        assert layer(res, n).status()["rrp_net1"] == "faulty"
    assert marks(res, "network_healthy") == []


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_lossy_network_is_readmitted_once_good_again(mode: str) -> None:
    """Network 1 loses 30% until 2.5 s, then nothing: marked faulty once while lossy,
    re-admitted at every node within a probe interval of the repair, never again faulty."""
    sc = scenario("rrp_lossy", rrp_mode=mode)
    sim = Simulation(sc, seed=1)
    good = replace(sc.network, loss_per_network=(0.0, 0.0))
    sim.sched.call_at(2500 * MS, setattr, sim, "_net", good)
    res = sim.run()
    single_ring_holds(res, sc)
    faulty = marks(res, "network_faulty")
    healthy = marks(res, "network_healthy")
    assert {k for _, _, k in faulty} == {1}
    assert sorted(n for _, n, _ in faulty) == sorted(sc.nodes)  # once a node
    assert all(t < 2500 * MS for t, _, _ in faulty)
    assert sorted(n for _, n, _ in healthy) == sorted(sc.nodes)  # once a node
    assert all(2500 * MS <= t < 3600 * MS for t, _, _ in healthy)
    for n in sc.nodes:
        assert layer(res, n).status()["rrp_net1"] == "healthy"


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_flapping_network_does_not_flap_the_ring(mode: str) -> None:
    sc = scenario("rrp_flapping", rrp_mode=mode)
    res = run(sc)
    single_ring_holds(res, sc)
    faulty = marks(res, "network_faulty")
    assert {k for _, _, k in faulty} == {1}
    for n in sc.nodes:
        assert sum(1 for _, m, _ in faulty if m == n) <= 3  # six flaps
        assert layer(res, n).status()["rrp_net1"] == "healthy"  # stable from 3.8 s


def test_every_network_of_one_node_down_changes_membership_then_merges() -> None:
    sc = scenario("rrp_all_down")
    res = run(sc)
    assert totem_check_all(res.events(), set(sc.nodes)) == []
    views = [
        r for r in res.events(kind="view", node="D") if r["t"] > 100 * MS and not r["transitional"]
    ]
    alone = [r for r in views if r["members"] == ["D"]]
    assert alone and all(1000 * MS < r["t"] < 3000 * MS for r in alone)
    final = {
        n: [r for r in res.events(kind="view", node=n) if not r["transitional"]][-1]
        for n in sc.nodes
    }
    assert len({r["view"] for r in final.values()}) == 1
    assert all(sorted(r["members"]) == list(sc.nodes) for r in final.values())
    for n in sc.nodes:
        assert not any(layer(res, n).faulty)


def test_active_passive_three_networks() -> None:
    sc = scenario("rrp_active_passive")
    res = run(sc)
    single_ring_holds(res, sc)
    assert {(n, k) for _, n, k in marks(res, "network_faulty")} == {(n, 2) for n in sc.nodes}
    assert {(n, k) for _, n, k in marks(res, "network_healthy")} == {(n, 2) for n in sc.nodes}
    # each packet on two of three networks: about two thirds of active's datagrams
    act = run(sc.with_settings(rrp_mode="active"))
    ratio = res.summary["messages_sent"] / act.summary["messages_sent"]
    assert 0.55 < ratio < 0.8


# ---------------------------------------------------------------- corosync's failures


def _nemesis(sc: Scenario, *actions: Action) -> Scenario:
    return replace(sc, nemesis=tuple(sorted((*sc.nemesis, *actions), key=lambda a: a.at)))


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_every_network_faulty_never_leaves_a_node_stuck(mode: str) -> None:
    """corosync: with every ring marked faulty a node stopped sending. Here network 1
    is dead from the start (marked faulty), then network 0 dies as network 1 comes
    back: the node tries every network, the ring goes on, network 1 is re-admitted."""
    base = scenario("rrp_network_down", rrp_mode=mode)
    swap = []
    for n in base.nodes:
        swap.append(Action(1000 * MS, "link_down", n, network=0))
        swap.append(Action(1000 * MS, "link_up", n, network=1))
    sc = _nemesis(base, *swap)
    res = run(sc)
    single_ring_holds(res, sc)
    for n in sc.nodes:
        st = layer(res, n).status()
        assert st["rrp_net1"] == "healthy" and st["rrp_net0"] == "faulty"


def test_problem_counter_does_not_stick_after_recovery(monkeypatch: Any) -> None:
    """corosync: an active ring's problem counter stayed up after the network came
    back. A short outage counts problems below the threshold; they decay to zero."""
    base = scenario("rrp_network_fails")
    sc = replace(
        base,
        duration=16_000 * MS,  # the workload stops at 6 s; a problem decays every 2 s
        nemesis=(
            Action(1000 * MS, "link_down", "B", network=0),
            Action(1004 * MS, "link_up", "B", network=0),
        ),
    )
    peak = [0]
    judge = RedundantRing._judge

    def watched(self: RedundantRing, *args: Any) -> None:
        judge(self, *args)
        peak[0] = max(peak[0], *self.problems)

    monkeypatch.setattr(RedundantRing, "_judge", watched)
    res = run(sc)
    single_ring_holds(res, sc)
    assert marks(res, "network_faulty") == []
    assert 0 < peak[0] < 10  # counted, below the threshold
    assert all(layer(res, n).problems == [0, 0] for n in sc.nodes)


def test_no_duplicate_commit_tokens_in_active_mode() -> None:
    """corosync: active mode handed a commit token to totemsrp twice during recovery.
    A crash under active replication: every copy after the first stops at the layer."""
    base = load_scenario(SCENARIOS / "crash.toml")
    sc = replace(base, network=replace(base.network, networks=2)).with_settings(rrp_mode="active")
    res = run(sc)
    assert totem_check_all(res.events(), {"A", "B", "D", "E"}) == []
    assert len(regular_views(res)) == 2  # the crash, and only the crash
    reasons = [r["detail"].get("reason", "") for r in res.events(kind="drop")]
    assert not any("duplicate" in x for x in reasons)


def test_passive_no_false_positive_under_heavy_multicast() -> None:
    """corosync: passive mode marked a healthy ring faulty under heavy multicast
    (frame counts drifting apart). Saturating load on two healthy networks."""
    base = load_scenario(SCENARIOS / "saturation.toml")
    sc = replace(base, network=replace(base.network, networks=2)).with_settings(rrp_mode="passive")
    res = run(sc)
    assert marks(res, "network_faulty") == []
    assert totem_check_all(res.events(), set(sc.nodes)) == []
    assert len(res.events(kind="deliver")) > 1000


def test_loss_per_network_in_the_network_model() -> None:
    from ringcast.sim.scenario import ScenarioError, parse_scenario

    doc: dict[str, Any] = {
        "protocol": "totem",
        "nodes": ["A", "B"],
        "duration": "1s",
        "network": {"networks": 2, "loss_per_network": [0.0, 0.3]},
    }
    assert parse_scenario(doc).network.loss_per_network == (0.0, 0.3)
    for bad, where in (([0.1], "loss_per_network"), ([0.0, 1.5], r"loss_per_network\[1\]")):
        doc["network"]["loss_per_network"] = bad
        with pytest.raises(ScenarioError, match=where):
            parse_scenario(doc)
    # active, never giving up on network 1: 30% of its half of the datagrams lost
    res = run(scenario("rrp_lossy", rrp_mode="active", rrp_problem_count_threshold=10**9))
    assert marks(res, "network_faulty") == []
    lost = res.summary["messages_lost"] / res.summary["messages_sent"]
    assert 0.13 < lost < 0.17
