"""Fuzz every registered protocol's machine: a node never crashes on a packet.

For each protocol of ``registry.installed_names()`` (so a new family is covered the day it
registers):

(a) decoded messages of every wire type of the protocol, and of any other registered
    type, with hypothesis-generated field values (huge and negative integers, empty and
    duplicate-laden lists, unknown and malformed node ids, from known and unknown
    sources), fed to machines driven into each state they reach in short seeded
    simulations;
(b) whole simulations whose network corrupts messages in flight (``corrupt``: random
    bytes of the encoded frame flipped, then decoded again, dropped if it no longer
    decodes), with loss, duplication and reordering.

Asserted: no exception escapes ``handle()``; every ``handle()`` returns within a few
seconds (a SIGALRM guard against hangs, not a performance assertion); a message
answered with ``drop`` records only leaves the machine's state unchanged.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringcast.core.events import Received
from ringcast.protocols import registry
from ringcast.sim import Simulation, parse_scenario

from .fuzzing import (
    NODES,
    all_wire_types,
    deadline,
    machines_in_states,
    message_strategy,
    node_ids,
    only_drops,
    snapshot,
    wire_types_of,
)

PROTOCOLS = registry.installed_names()  # not the toy protocols other tests register
HANDLE_GUARD_S = 5


@cache
def _machines(name: str) -> dict[str, list[Any]]:
    return machines_in_states(name)


def test_every_protocol_is_fuzzed_in_more_than_its_boot_state() -> None:
    for name in PROTOCOLS:
        assert _machines(name), name
    # Totem is driven through all four membership states
    assert set(_machines("totem")) == {"Gather", "Commit", "Recovery", "Operational"}


def _suspected(m: Any, src: str) -> bool:
    """Whether ``m``'s failure detector suspects ``src``: any datagram from it, even one
    the protocol drops, is a sign of life that rightly changes the state."""
    detector = getattr(m, "detector", None)
    return detector is not None and src in detector.suspected


def _feed(m: Any, src: str, msgs: list[Any], now: int) -> None:
    for i, msg in enumerate(msgs):
        before = snapshot(m)
        revived = _suspected(m, src)
        with deadline(HANDLE_GUARD_S):
            out = m.handle(Received(src, msg), now + i)
        assert isinstance(out, list)
        if only_drops(out) and not revived:
            after = snapshot(m)
            assert after == before, f"{type(msg).__name__} was dropped but changed the state"


@pytest.mark.parametrize("name", PROTOCOLS)
@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same examples every run: CI is deterministic
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_decoded_messages_in_every_state(name: str, data: st.DataObject) -> None:
    states = _machines(name)
    state = data.draw(st.sampled_from(sorted(states)), label="state")
    m = copy.deepcopy(data.draw(st.sampled_from(states[state]), label="machine"))
    own = wire_types_of(name)
    classes = (
        st.one_of(message_strategy(own), message_strategy(all_wire_types()))
        if own
        else message_strategy(all_wire_types())
    )
    msgs = data.draw(st.lists(classes, min_size=1, max_size=3), label="messages")
    src = data.draw(st.one_of(st.sampled_from(NODES), node_ids), label="src")
    _feed(m, src, msgs, now=10**10)


def _corrupt_doc(name: str, seed: int) -> dict[str, Any]:
    return {
        "name": f"corrupt_{name}",
        "protocol": name,
        "nodes": ["A", "B", "C", "D"],
        "duration": "1500ms",
        "count_bytes": False,
        "network": {
            "latency": {"dist": "uniform", "low": "100us", "high": "600us"},
            "loss": 0.05,
            "duplication": 0.05,
            "reorder": 0.1,
            "reorder_delay": "1ms",
            "corrupt": 0.2,
        },
        "workload": [
            {"nodes": "all", "rate": 100.0, "size": 60, "order": o, "start": "10ms"}
            for o in ("agreed", "safe")
        ],
        "nemesis": [
            {"at": "400ms", "action": "partition", "groups": [["A", "B"], ["C", "D"]]},
            {"at": "700ms", "action": "heal"},
            {"at": "900ms", "action": "crash", "node": "D"},
            {"at": "1100ms", "action": "restart", "node": "D"},
        ],
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", PROTOCOLS)
def test_messages_corrupted_in_flight(name: str, seed: int) -> None:
    sc = parse_scenario(_corrupt_doc(name, seed), f"corrupt:{name}")
    sim = Simulation(sc, seed=seed)
    with deadline(120):  # the whole run: a hang in any handle() trips it
        res = sim.run()
    rows = res.events()
    assert any(r["kind"] == "deliver" for r in rows), "nothing was delivered"
    if name == "totem":  # corrupted Totem packets are caught by validation and counted
        assert any(
            r["kind"] == "drop" and str(r["detail"].get("reason", "")).startswith("invalid")
            for r in rows
        )


def test_corruption_is_deterministic_and_off_by_default() -> None:
    doc = _corrupt_doc("totem", 1)
    a = Simulation(parse_scenario(doc), seed=4).run().events()
    b = Simulation(parse_scenario(doc), seed=4).run().events()
    assert a == b
    del doc["network"]["corrupt"]
    assert parse_scenario(doc).network.corrupt == 0.0
