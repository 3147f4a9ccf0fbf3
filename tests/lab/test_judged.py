"""Which nodes of a real cluster's trace are judged crashed where their traces end."""

from __future__ import annotations

from ringcast.lab.checks.context import JudgedCrash, NodeInfo, judged_crashes


def node(run: str, name: str, tmax: int, clean: bool, states: bool = False) -> NodeInfo:
    return NodeInfo(run, "totem", name, 0, 0, 10, tmax, clean, states)


def test_a_stopped_cluster_s_node_without_a_clean_end_is_judged_crashed() -> None:
    nodes = [node("r", "n1", 900, True), node("r", "n2", 400, False), node("r", "n3", 910, True)]
    assert judged_crashes(nodes) == [JudgedCrash("r", "n2", 400)]
    assert "n2's trace ends at t=0.000ms without a clean stop" in judged_crashes(nodes)[0].note()


def test_a_running_cluster_or_a_simulation_is_not_judged() -> None:
    running = [node("r", "n1", 900, False), node("r", "n2", 400, False)]
    assert judged_crashes(running) == []
    simulated = [node("s", "A", 900, True, True), node("s", "B", 400, False, True)]
    assert judged_crashes(simulated) == []
    # runs are judged apart
    stopped = [node("q", "n1", 5, True), node("q", "n2", 3, False)]
    assert judged_crashes(running + simulated + stopped) == [JudgedCrash("q", "n2", 3)]
