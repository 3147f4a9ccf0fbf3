"""Per-link overrides restricted to one message class (``[[network.links]] match``)."""

from __future__ import annotations

import pytest

from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.scenario import ScenarioError

BASE = {
    "protocol": "tribes",
    "nodes": ["A", "B"],
    "duration": "500ms",
    "workload": [{"rate": 100, "order": "fifo", "start": "200ms", "count": 10}],
}


def test_only_the_matched_class_is_lost() -> None:
    doc = {
        **BASE,
        "network": {"links": [{"from": "A", "to": "B", "match": "MemberBeacon", "loss": 1.0}]},
    }
    res = Simulation(parse_scenario(doc), seed=1).run()
    b = res.machines["B"].upper  # type: ignore[attr-defined]
    a = res.machines["A"].upper  # type: ignore[attr-defined]
    # B never heard A's heartbeats, A heard B's; unicast A -> B still works
    assert not b.membership.members["A"].direct and a.membership.members["B"].direct
    got = {r["msg"] for r in res.events(kind="deliver", node="B") if r["msg"].startswith("A:")}
    assert len(got) == 10


def test_a_link_rule_without_match_keeps_its_traces() -> None:
    plain = {**BASE, "network": {"links": [{"from": "A", "to": "B", "loss": 0.2}]}}
    other = {
        **BASE,
        "network": {
            "links": [
                {"from": "A", "to": "B", "loss": 0.2},
                {"from": "B", "to": "A", "match": "NoSuchMessage", "loss": 1.0},
            ]
        },
    }
    one = Simulation(parse_scenario(plain), seed=3).run().events()
    two = Simulation(parse_scenario(other), seed=3).run().events()
    assert one == two


@pytest.mark.parametrize("bad", [3, "", ["MemberBeacon"]])
def test_a_bad_match_is_named(bad: object) -> None:
    doc = {**BASE, "network": {"links": [{"from": "A", "to": "B", "match": bad, "loss": 1.0}]}}
    with pytest.raises(ScenarioError, match=r"network\.links\[0\]\.match"):
        parse_scenario(doc)
