"""The transition table, its diagram in the docs, registration, the absolute order and
the handling of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.core.codec import decode, encode
from ringcast.core.effects import Record
from ringcast.core.events import Received, Start, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.protocols import registry
from ringcast.protocols.tribes import (
    SETTINGS,
    SPEC,
    TABLE,
    CoordConf,
    CoordMember,
    CoordRequest,
    Ev,
    MemberBeacon,
    State,
    TribesMachine,
    TribesSettings,
    _order,
    make_tribes,
    mermaid,
)
from ringcast.protocols.tribes._state import Action

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocols" / "tribes.md"


def test_docs_embed_the_rendered_table() -> None:
    text = DOC.read_text()
    assert mermaid() in text
    assert text.count("```mermaid") == 1


def test_every_action_is_a_method_and_every_running_state_lists_every_event() -> None:
    for action in Action:
        assert callable(getattr(TribesMachine, "_" + action.value)), action
    assert set(TABLE.row(State.STARTING)) == set(TABLE.events)
    for state in (State.IDLE, State.WAITING, State.ELECTING):
        # every event but the node's own start, which happens once, in starting
        assert set(TABLE.row(state)) == set(TABLE.events) - {Ev.START}, state


def test_registered_through_the_entry_point() -> None:
    spec = registry.get("tribes")
    assert spec is SPEC and "tribes" in registry.builtin_names()
    assert spec.claims == {
        "view_agreement",
        "leader_agreement",
        "convergence",
        "integrity",
        "fifo",
        "delivery_progress",
    }
    assert spec.wire_ids == (0x0300, 0x03FF)


def test_absolute_order_priority_then_unsigned_node_id() -> None:
    members = [(0, "b"), (0, "B"), (5, "z"), (0, "\u00e9"), (0, "a")]
    assert [n for _, n in _order.ordered(members)] == ["z", "B", "a", "b", "\u00e9"]
    assert _order.parse_priorities(" A:10, B:-2 ,") == {"A": 10, "B": -2}
    for bad, needle in [("A", "node:priority"), ("A:x", "not an integer"), ("A:1,A:2", "twice")]:
        with pytest.raises(ValueError, match=needle):
            _order.parse_priorities(bad)


def _settings(**kw: object) -> TribesSettings:
    s = {k: v.default for k, v in SETTINGS.items()}
    s.update(kw)
    return TribesSettings.from_mapping(s)


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="member_drop_time"):
        _settings(member_drop_time=10, heartbeat_interval=20)
    with pytest.raises(ValueError, match="priorities"):
        make_tribes(MachineContext("A", ("A",), ("A",), settings={"priorities": "A=1"}))


def _machine() -> TribesMachine:
    m = TribesMachine(MachineContext("B", ("A", "B"), ("A", "B")), _settings())
    m.handle(Start(), 0)
    return m


def _cm(n: str) -> CoordMember:
    return CoordMember(n, 0, 1)


BAD_TOKENS = [
    CoordRequest("", "A", "A", (_cm("A"), _cm("B")), ("A", "B")),
    CoordRequest("x", "A", "A", (), ("A",)),
    CoordRequest("x", "Q", "A", (_cm("A"), _cm("B")), ("A", "B")),
    CoordRequest("x", "A", "A", (_cm("A"), _cm("A")), ("A",)),
    CoordRequest("x", "A", "A", (_cm("A"), CoordMember("B", 0, 0)), ("A", "B")),
    CoordRequest("x", "A", "A", (_cm("A"), _cm("B")), ()),
    CoordRequest("x", "A", "A", (_cm("A"), _cm("B")), ("A", "A")),
    CoordRequest("x", "A", "A", (_cm("A"), CoordMember("has space", 0, 1)), ("A",)),
]


@pytest.mark.parametrize("tok", BAD_TOKENS)
def test_malformed_tokens_are_dropped_and_counted(tok: CoordRequest) -> None:
    m = _machine()
    before = (m.state, m.membership.names(), m.last_token)
    out = m.handle(Received("A", tok), 1)
    assert [type(e) for e in out] == [Record] and out[0].kind == "drop"
    assert (m.state, m.membership.names(), m.last_token) == before and m.drops == 1


def test_foreign_and_stale_views_are_dropped() -> None:
    m = _machine()
    foreign = CoordConf("x", "A:1", "A", (_cm("A"), _cm("C")))
    wrong_leader = CoordConf("x", "A:1", "C", (_cm("A"), _cm("B")))
    bad_id = CoordConf("x", "A-1", "A", (_cm("A"), _cm("B")))
    for conf in (foreign, wrong_leader, bad_id):
        out = m.handle(Received("A", conf), 1)
        assert any(isinstance(e, Record) and e.kind == "drop" for e in out)
    assert m.view_id is None
    m.handle(Received("A", CoordConf("y", "A:2", "A", (_cm("A"), _cm("B")))), 2)
    assert m.view_id == "A:2" and m.getCoordinator() == "A"
    out = m.handle(Received("A", CoordConf("z", "A:1", "A", (_cm("A"), _cm("B")))), 3)
    assert any(isinstance(e, Record) and e.kind == "drop" for e in out) and m.view_id == "A:2"


def test_garbage_beacons_and_unknown_messages_never_raise() -> None:
    m = _machine()
    out = m.handle(Received("A", MemberBeacon(0, 0, 0)), 1)
    assert out[0].kind == "drop"  # type: ignore[union-attr]
    out = m.handle(Received("A", object()), 1)
    assert out[0].kind == "drop"  # type: ignore[union-attr]
    assert m.handle(TimerFired("no such timer"), 2) == []


def test_wire_round_trip() -> None:
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B")), ("A", "B"), (_cm("C"),))
    frame = decode(encode(tok, sender="A"))
    assert frame.msg == tok


def test_random_well_typed_garbage_never_raises() -> None:
    """Any decodable message (right types, arbitrary values) is handled or dropped."""
    import random

    from ringcast.protocols.tribes import AppData, CoordAlive, MemberShutdown

    rng = random.Random(7)
    names = ["A", "B", "C", "", "x y", "A" * 70, "\u00e9"]

    def member() -> CoordMember:
        return CoordMember(rng.choice(names), rng.randint(-3, 3), rng.randint(-1, 3))

    def members() -> tuple[CoordMember, ...]:
        return tuple(member() for _ in range(rng.randint(0, 4)))

    def msg() -> object:
        k = rng.randint(0, 5)
        if k == 0:
            route = tuple(rng.choice(names) for _ in range(rng.randint(0, 3)))
            return CoordRequest(
                rng.choice(["", "A.1.1", "B.1.1"]),
                rng.choice(names),
                rng.choice(names),
                members(),
                route,
                members(),
            )
        if k == 1:
            return CoordConf(
                rng.choice(["", "A.1.1"]), rng.choice(["A:1", "B:x", ":"]), "A", members()
            )
        if k == 2:
            return MemberBeacon(rng.randint(-2, 2), rng.randint(-2, 2), rng.randint(-2, 2))
        if k == 3:
            return MemberShutdown(rng.randint(-2, 2))
        if k == 4:
            return CoordAlive(rng.randint(-2, 2))
        return AppData("A:1", b"x", rng.choice(["fifo", "agreed", "nope"]))

    for trial in range(40):
        m = _machine()
        for step in range(60):
            src = rng.choice(["A", "C", "B"])
            out = m.handle(Received(src, msg()), trial * 1000 + step)
            assert not any(getattr(e, "kind", None) == "invariant" for e in out)
        m.handle(TimerFired("tribes:wait"), 10**9)
