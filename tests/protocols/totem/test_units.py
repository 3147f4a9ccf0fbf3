"""Unit tests of the Totem modules: codec, transition table and doc, ordering rules, flow
control, packing and fragmentation, and a machine fed bad or unexpected messages."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ringcast.core.codec import decode, encode
from ringcast.core.effects import Backpressure, Effect, Multicast, Persist, Record, Send
from ringcast.core.events import Received, Start, Submit
from ringcast.core.fsm import Driver
from ringcast.core.machine import MachineContext
from ringcast.protocols import registry
from ringcast.protocols.totem import SPEC, render_mermaid
from ringcast.protocols.totem._messages import (
    Chunk,
    CommitToken,
    Join,
    Mcast,
    MembEntry,
    MergeDetect,
    RecoveryMcast,
    RingId,
    Token,
)
from ringcast.protocols.totem._state import ROWS, TABLE, Action, Ev, State
from ringcast.protocols.totem.flow import allowance
from ringcast.protocols.totem.ordering import RingLog
from ringcast.protocols.totem.packing import Packer, Reassembler

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocols" / "totem.md"
R = RingId(5, "P1")
M = Mcast(R, 3, "P1", True, (Chunk("P1:1", b"x" * 10), Chunk("P1:2", b"", 0, 2)))
SAMPLES = [
    R,
    Chunk("a:1", b"\x00\xff", 1, 3),
    M,
    RecoveryMcast(RingId(9, "P1"), 1, "P2", M),
    Token(R, 7, 10, 8, "P2", (9, 10), 4, 3, True, "P3", 2),
    Join("P4", 5, ("P1", "P4"), ("P2",)),
    MembEntry("P2", R, 3, 2, 4, False),
    CommitToken(RingId(9, "P1"), 2, ("P1", "P2"), 1, (MembEntry("P1", R, 3, 3, 3, True),)),
    MergeDetect(R, "P1"),
]


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips(msg: object) -> None:
    assert decode(encode(msg, sender="P1")).msg == msg


def test_doc_contains_exactly_the_rendered_state_diagram() -> None:
    text = DOC.read_text()
    rendered = render_mermaid()
    assert f"```mermaid\n{rendered}```" in text
    assert text.count("stateDiagram-v2") == 1


def test_table_covers_the_four_states_and_the_seed_events() -> None:
    assert {s for s, _ in ROWS} == set(State)
    assert {e for _, e in ROWS} == set(Ev)
    for (_, ev), tr in ROWS.items():
        assert tr.targets, ev


def test_aru_rules_of_the_seed() -> None:
    log = RingLog(R)
    for s in (1, 2):
        log.add(Mcast(R, s, "P1", False, ()))
    assert log.my_aru == 2
    # my_aru below the token's aru: lower it, aru_id = me
    assert log.update_aru(3, "", 3, 3, "P2") == (2, "P2")
    # aru_id is me: set aru to my_aru
    log.add(Mcast(R, 3, "P1", False, ()))
    assert log.update_aru(2, "P2", 3, 3, "P2") == (3, "")
    # aru == seq: move in step with my broadcasts
    log.add(Mcast(R, 4, "P2", False, ()))
    assert log.update_aru(3, "", 3, 4, "P2") == (4, "")
    # otherwise unchanged
    assert log.update_aru(1, "P3", 4, 4, "P2") == (1, "P3")
    assert log.missing(6, ()) == [5, 6]
    assert log.missing(6, (5,)) == [6]


def test_safe_needs_two_successive_rotations() -> None:
    log = RingLog(R)
    log.add(Mcast(R, 1, "P1", True, ()))
    log.stabilize(1)  # first visit: last_aru is 0
    assert log.safe_upto == 0
    log.last_aru = 1
    log.stabilize(1)
    assert log.safe_upto == 1


def test_flow_control_fair_share() -> None:
    kw = dict(window_size=50, max_messages=17, fcc=0, my_prev_trc=0, seq=0, aru=0)
    assert allowance(backlog=0, my_pbl=0, my_tbl=100, **kw) == 17  # max_messages
    # others' backlog 300, mine 100: share = 50 * 100 / 400 = 12
    assert allowance(backlog=300, my_pbl=0, my_tbl=100, **kw) == 12
    # my own previous backlog is not counted as the others'
    assert allowance(backlog=300, my_pbl=300, my_tbl=100, **kw) == 17
    # the window is nearly used up by the others in the last rotation
    kw2 = {**kw, "fcc": 45}
    assert allowance(backlog=0, my_pbl=0, my_tbl=100, **kw2) == 5
    assert allowance(backlog=0, my_pbl=0, my_tbl=0, **kw) == 0


def test_an_id_longer_than_the_frame_with_an_empty_payload_goes_out_once() -> None:
    """It used to be cut into 0 pieces, sent as frags=0 (invalid) for ever."""
    p = Packer(64)
    p.push("x" * 100, b"", False)
    f = p.next_frame(R, 1, "a")
    assert f is not None and [(c.frag, c.frags, c.payload) for c in f.chunks] == [(0, 1, b"")]
    assert p.next_frame(R, 2, "a") is None


@pytest.mark.parametrize("frame_size", [64, 300, 1400, 8800])
def test_every_frame_encodes_within_frame_size(frame_size: int) -> None:
    """frame_size bounds the encoded frame, headers included (it used to count the chunks
    only, with an estimate 8 bytes short a chunk: full 1400-byte frames of 100 B messages
    were 1,512 bytes, and IP-fragmented on a 1500-byte MTU)."""
    rng = random.Random(frame_size)
    p = Packer(frame_size)
    ring = RingId(123456, "node-é1")
    for i in range(300):
        msg_id = rng.choice(["n1", "nœud-2", "x" * 30]) + f":{i}"
        p.push(msg_id, b"p" * rng.choice([0, 1, 100, 1000, 3000]), rng.random() < 0.2)
    frames = 0
    while (f := p.next_frame(ring, 10**9 + frames, "node-é1")) is not None:
        frames += 1
        size = len(encode(f, sender="node-é1"))
        smallest_piece = len(f.chunks) == 1 and len(f.chunks[0].payload) <= 1
        assert size <= frame_size or smallest_piece, (size, f.chunks[0].msg_id)
    assert frames > 0


def test_a_full_default_frame_of_100_byte_messages_fits_a_1500_byte_mtu() -> None:
    p = Packer(1400)
    for i in range(30):
        p.push(f"n1:{i + 10000}", b"x" * 100, False)
    f = p.next_frame(R, 1, "n1")
    assert f is not None and len(f.chunks) == 10
    # + the HMAC envelope (17 + sender + 32 bytes) + UDP/IP (28)
    assert len(encode(f, sender="n1")) + 17 + 2 + 32 + 28 <= 1500


def test_packing_and_fragmentation() -> None:
    p = Packer(300)
    p.push("a:1", b"1" * 50, False)
    p.push("a:2", b"2" * 50, False)
    p.push("a:3", b"3" * 50, True)
    p.push("a:4", b"4" * 1000, False)
    f1 = p.next_frame(R, 1, "a")
    assert f1 is not None and [c.msg_id for c in f1.chunks] == ["a:1", "a:2"]  # same order only
    f2 = p.next_frame(R, 2, "a")
    assert f2 is not None and f2.safe and len(f2.chunks) == 1
    frags = []
    while (f := p.next_frame(R, 3, "a")) is not None:
        frags.append(f.chunks[0])
    # a 300-byte frame less its header and the chunk's: pieces of about 220 bytes
    assert len(frags) == 5 and all(c.frags == 5 for c in frags)
    r = Reassembler()
    outs = [r.feed("a", c) for c in frags]
    assert outs[:4] == [None] * 4 and outs[4] == b"4" * 1000
    # a missing piece loses the message, never a garbled payload
    assert r.feed("a", frags[0]) is None and r.feed("a", frags[2]) is None
    assert r.feed("a", frags[4]) is None


def _machine(node: str = "P1", **settings: object) -> object:
    ctx = MachineContext(node, ("P1", "P2", "P3"), ("P1", "P2", "P3"), settings=settings)
    return SPEC.factory(ctx)


def test_registered_with_settings() -> None:
    spec = registry.get("totem")
    assert {"token_timeout", "window_size", "max_pending", "frame_size"} <= set(spec.settings)


def test_bad_and_unexpected_messages_are_dropped_and_recorded() -> None:
    m = _machine()
    m.handle(Start(), 0)
    bad = [
        "garbage",
        Token(RingId(99, "X"), 1, 0, 0, "", (), 0, 0),  # a token in Gather
        CommitToken(RingId(99, "X"), 0, ("X",), 0, ()),  # without me
    ]
    for msg in bad:
        out = m.handle(Received("P2", msg), 1)
        assert any(type(e) is Record and e.kind == "drop" for e in out), msg


def test_restart_reads_the_persisted_ring_seq() -> None:
    ctx = MachineContext("P1", ("P1",), ("P1",), storage={"ring_seq": b"41"})
    m = SPEC.factory(ctx)
    out = m.handle(Start(), 0)
    assert Persist("ring_seq", b"42") in out
    assert any(type(e) is Multicast and type(e.msg) is Join and e.msg.ring_seq == 42 for e in out)


def test_backpressure_when_the_queue_is_full() -> None:
    m = _machine(max_pending=3)
    m.handle(Start(), 0)
    outs = [m.handle(Submit(f"P1:{i}", b"x"), i) for i in range(3)]
    assert [any(type(e) is Backpressure and e.blocked for e in o) for o in outs] == [
        False,
        False,
        True,
    ]


def test_duplicate_token_is_dropped() -> None:
    # a singleton ring: form it through the consensus timeout, then replay its token
    from ringcast.core.events import TimerFired

    ctx = MachineContext("P1", ("P1",), ("P1",))
    m = SPEC.factory(ctx)
    m.handle(Start(), 0)
    m.handle(TimerFired("consensus"), 1)
    m.handle(TimerFired("token_hold"), 2)
    m.handle(TimerFired("token_hold"), 3)
    assert m.state is State.OPERATIONAL
    tok = m.held
    assert tok is not None
    m.handle(TimerFired("token_hold"), 4)
    out = m.handle(Received("P1", tok), 5)
    assert any(
        type(e) is Record and e.kind == "drop" and e.fields["reason"] == "duplicate token"
        for e in out
    )
    assert not any(type(e) is Send for e in out)


def test_dispatch_is_the_platform_table() -> None:
    from ringcast.core.fsm import TransitionTable

    assert isinstance(TABLE, TransitionTable)
    assert TABLE.rows == ROWS
    m = _machine()
    m.handle(Start(), 0)
    # a regular token in Gather: the table's unlisted row, state unchanged
    out = m.handle(Received("P2", Token(RingId(99, "X"), 1, 0, 0, "", (), 0, 0)), 1)
    assert TABLE.unlisted(State.GATHER, Ev.TOKEN) in out
    assert m.state is State.GATHER


def test_a_target_outside_the_table_is_an_invariant_row_not_an_exception() -> None:
    m = _machine()
    m.handle(Start(), 0)

    def force(now: int) -> list[Effect]:
        out: list[Effect] = []
        m._set_state(State.RECOVERY, out, "forced by the test")
        return out

    # Gather on a join timeout may only stay in Gather.
    actions = {**{a: m._act_mcast for a in Action}, Action.JOIN_TIMEOUT: force}
    m.fsm = Driver(TABLE, m, actions, status=m.status)
    out = m.fsm.step(Ev.JOIN_TIMEOUT, 1)
    inv = [e for e in out if type(e) is Record and e.kind == "invariant"]
    assert len(inv) == 1 and inv[0].fields["before"] == "Gather"
    assert inv[0].fields["after"] == "Recovery"
    assert m.state is State.RECOVERY  # it carries on
