"""Nemesis ``garble``: a member whose messages arrive with a hostile field (a buggy or
compromised node whose packets pass authentication). No node fails on one, and once the
member stops, every protocol's group converges again."""

from __future__ import annotations

import random

import pytest

from ringcast.lab import reference as checks
from ringcast.protocols import registry
from ringcast.protocols.tribes import MemberBeacon
from ringcast.sim import ScenarioError, Simulation, parse_scenario
from ringcast.sim.garble import detection_timeout, garble_scenario, garbled, hostile_field

NODES = ["A", "B", "C", "D"]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("protocol", registry.builtin_names())
def test_a_garbling_member_fails_no_node_and_the_group_converges_after(
    protocol: str, seed: int
) -> None:
    doc = garble_scenario(protocol, 0.3)
    res = Simulation(parse_scenario(doc), seed).run()
    rows = res.events()
    faults = [r["detail"]["action"] for r in rows if r["kind"] == "fault"]
    assert faults == ["garble", "ungarble"]
    # B really sent garbled messages (dozens at least), the run went on to the end (a
    # machine that raised would have stopped it), and it ends in one view of all four.
    assert res.summary["messages_garbled"] >= 20, res.summary
    assert checks.convergence(rows, set(doc["nodes"])) == []
    # ... and goes on delivering: every node something of every sender in the last 8 T.
    since = 32 * detection_timeout(protocol)
    assert checks.delivery_stalls(rows, set(doc["nodes"]), since) == []


def test_garbled_messages_keep_their_type_and_change_one_field() -> None:
    rng = random.Random(5)
    genuine = MemberBeacon(5, 12_345, 7, "A:3")
    for _ in range(50):
        m = garbled(genuine, "A", rng)
        assert type(m) is MemberBeacon
        changed = [
            f
            for f in ("priority", "start_time", "incarnation", "view_id")
            if getattr(m, f) != getattr(genuine, f)
        ]
        assert len(changed) == 1
    assert hostile_field(3, rng) == 3  # not a message: left alone


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"action": "garble"}, r"node: required for garble"),
        ({"action": "garble", "node": "B", "share": 0}, r"share: a garbling node"),
        ({"action": "garble", "node": "B", "share": 1.5}, r"share: expected a probability"),
        ({"action": "ungarble", "node": "Q"}, r"node: unknown node 'Q'"),
    ],
)
def test_a_garble_action_with_a_mistake_is_refused(action: dict[str, object], message: str) -> None:
    doc = {
        "protocol": "basic",
        "nodes": NODES,
        "duration": "1s",
        "nemesis": [{"at": "0s", **action}],
    }
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(doc)
