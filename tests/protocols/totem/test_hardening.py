"""Totem: a node never trusts a packet.

The two commit-token defects (a ``my_aru`` that made the recovery plan loop without end,
and a commit token without an entry for the receiver's old ring that raised out of
``handle()`` with the machine half-updated), and the validation of every field the
machine reads (``_validate``): a message that fails is dropped with a ``drop`` row and
the machine's state is unchanged.
"""

from __future__ import annotations

import copy
import dataclasses
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ringcast.core.effects import Multicast, Record, Send
from ringcast.core.events import Received, Start, Submit, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.protocols.totem import SPEC
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
from ringcast.protocols.totem._state import State
from ringcast.protocols.totem.flow import observed_fcc
from ringcast.protocols.totem.machine import TotemMachine

MEMB = ("P1", "P2", "P3")
NEW = RingId(9, "P1")


@contextmanager
def deadline(seconds: int = 5) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block does not return in time."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"handle() did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def in_commit() -> tuple[TotemMachine, CommitToken]:
    """P2 of {P1, P2, P3}, in Commit after the first rotation of P1's commit token; and
    the commit token P2 forwarded (P1's and P2's entries)."""
    m = SPEC.factory(MachineContext("P2", MEMB, MEMB))
    assert isinstance(m, TotemMachine)
    m.handle(Start(), 0)
    for src in ("P1", "P3"):
        m.handle(Received(src, Join(src, 1, MEMB, ())), 1)
    p1 = MembEntry("P1", RingId(2, "P1"), 0, 0, 0, True)
    m.handle(Received("P1", CommitToken(NEW, 0, MEMB, 0, (p1,))), 2)
    assert m.state is State.COMMIT and m.commit is not None
    return m, m.commit


def snapshot(m: TotemMachine) -> dict[str, Any]:
    """The machine's state, to compare before and after a rejected message."""
    skip = {"now", "ctx", "fsm"}
    return {k: copy.deepcopy(v) for k, v in vars(m).items() if k not in skip}


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(v: Any) -> Any:
        if hasattr(v, "__slots__") and not hasattr(v, "__dict__"):
            return (type(v).__name__, *(norm(getattr(v, s)) for s in v.__slots__))
        if hasattr(v, "__dataclass_fields__") or isinstance(v, int | str | tuple | bool):
            return v
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, set | frozenset):
            return frozenset(v)
        return repr(v) if v is None else norm(vars(v)) if hasattr(v, "__dict__") else v

    return norm(a) == norm(b)


def drops(out: list[object]) -> list[str]:
    return [str(e.fields.get("reason")) for e in out if type(e) is Record and e.kind == "drop"]


def test_commit_token_with_a_huge_negative_my_aru_returns_and_is_dropped() -> None:
    """Defect: recovery.make_plan iterated range(low + 1, high_seq + 1) with ``low`` the
    lowest my_aru of the commit token's entries: -2**62 never returned."""
    m, mine = in_commit()
    me = mine.entries[1]
    bad_p1 = MembEntry("P1", me.ring_id, -(2**62), 0, 0, True)  # shares P2's old ring
    p3 = MembEntry("P3", RingId(3, "P3"), 0, 0, 0, True)
    before = snapshot(m)
    with deadline():
        out = m.handle(Received("P1", CommitToken(NEW, 3, MEMB, 2, (bad_p1, me, p3))), 3)
    assert any(r.startswith("invalid CommitToken") for r in drops(out)), out
    assert m.state is State.COMMIT
    assert same_state(before, snapshot(m))


def test_commit_token_without_my_old_ring_is_dropped_state_unchanged() -> None:
    """Defect: with no entry for the receiver's old ring, make_plan's min() raised
    ValueError out of handle() after ``commit`` was set and the state was still Commit."""
    m, mine = in_commit()
    p1, me = mine.entries
    elsewhere = MembEntry("P2", RingId(77, "P9"), 0, 0, 0, True)  # not P2's old ring
    p3 = MembEntry("P3", RingId(3, "P3"), 0, 0, 0, True)
    before = snapshot(m)
    out = m.handle(Received("P1", CommitToken(NEW, 3, MEMB, 2, (p1, elsewhere, p3))), 3)
    assert any(r.startswith("invalid CommitToken") for r in drops(out)), out
    assert m.state is State.COMMIT and m.commit == mine
    assert same_state(before, snapshot(m))
    # the real second rotation still moves it to Recovery
    out = m.handle(Received("P1", CommitToken(NEW, 3, MEMB, 2, (p1, me, p3))), 4)
    assert m.state is State.RECOVERY and not drops(out)


def test_recovery_plan_walks_what_the_node_holds() -> None:
    """make_plan's queue is the node's own frames above the lowest my_aru, whatever the
    commit token says (no loop bounded by a packet field)."""
    from ringcast.protocols.totem.ordering import RingLog
    from ringcast.protocols.totem.recovery import make_plan

    old = RingId(2, "P1")
    log = RingLog(old)
    for s in (1, 2, 3, 5, 8):
        log.add(Mcast(old, s, "P1", False, (Chunk(f"P1:{s}", b""),)))
    entries = (
        MembEntry("P1", old, 0, 0, 8, False),
        MembEntry("P2", old, 3, 3, 8, False),
    )
    with deadline():
        plan = make_plan(CommitToken(NEW, 2, ("P1", "P2"), 1, entries), log)
    assert list(plan.queue) == [1, 2, 3, 5, 8]


def test_recovery_does_not_send_the_old_rings_own_recovery_frames_again() -> None:
    """A frame of the old ring's own recovery (a RecoveryMcast) carries a message of the
    ring before; every receiver refuses one wrapped again, so the new ring's aru never
    passed its seq and the ring stayed in Recovery for good (garble soak, share 0.6,
    seed 340: a corrupted token had left a member without such a frame)."""
    from ringcast.protocols.totem.ordering import RingLog
    from ringcast.protocols.totem.recovery import make_plan

    older, old = RingId(1, "P1"), RingId(2, "P1")
    log = RingLog(old)
    log.add(RecoveryMcast(old, 1, "P1", Mcast(older, 4, "P2", False, (GOOD_CHUNK,))))
    for s in (2, 3):
        log.add(Mcast(old, s, "P1", False, (Chunk(f"P1:{s}", b""),)))
    entries = (
        MembEntry("P1", old, 3, 3, 3, False),
        MembEntry("P2", old, 0, 0, 3, False),
    )
    plan = make_plan(CommitToken(NEW, 2, ("P1", "P2"), 1, entries), log)
    assert list(plan.queue) == [2, 3]


R = RingId(5, "P1")
GOOD_CHUNK = Chunk("P1:1", b"x")
BAD_MESSAGES = [
    ("Mcast seq negative", Mcast(R, -1, "P1", False, (GOOD_CHUNK,))),
    ("Mcast no chunks", Mcast(R, 1, "P1", False, ())),
    ("Mcast frag >= frags", Mcast(R, 1, "P1", False, (Chunk("P1:1", b"", 3, 2),))),
    ("Mcast duplicate msg ids", Mcast(R, 1, "P1", False, (GOOD_CHUNK, GOOD_CHUNK))),
    ("Mcast empty sender", Mcast(R, 1, "", False, (GOOD_CHUNK,))),
    ("Mcast ring seq huge", Mcast(RingId(2**63 - 1, "P1"), 1, "P1", False, (GOOD_CHUNK,))),
    (
        "RecoveryMcast bad old",
        RecoveryMcast(R, 1, "P1", Mcast(R, 0, "P1", False, (GOOD_CHUNK,))),
    ),
    ("Token aru above seq", Token(R, 1, 3, 9, "", (), 0, 0)),
    ("Token rtr duplicates", Token(R, 1, 5, 0, "P1", (2, 2), 0, 0)),
    ("Token rtr beyond seq", Token(R, 1, 5, 0, "P1", (6,), 0, 0)),
    ("Token rtr too long", Token(R, 1, 50, 0, "P1", tuple(range(1, 41)), 0, 0)),
    ("Token negative fcc", Token(R, 1, 5, 0, "P1", (), -1, 0)),
    ("Token null aru_id below seq", Token(R, 1, 5, 3, "", (), 0, 0)),
    ("Token retrans_flg without retrans_id", Token(R, 1, 5, 5, "", (), 0, 0, True, "", 0)),
    ("Token retrans_id without retrans_flg", Token(R, 1, 5, 5, "", (), 0, 0, False, "P1", 0)),
    ("Join sender spoofed", Join("P3", 1, ("P1", "P3"), ())),
    ("Join proc_set duplicates", Join("P1", 1, ("P1", "P1"), ())),
    ("Join fail_set outside proc_set", Join("P1", 1, ("P1",), ("P7",))),
    ("Join empty proc_set", Join("P1", 1, (), ())),
    ("Join negative ring_seq", Join("P1", -5, ("P1",), ())),
    ("CommitToken memb duplicates", CommitToken(NEW, 0, ("P1", "P1", "P2"), 0, ())),
    ("CommitToken memb_index out", CommitToken(NEW, 0, MEMB, 7, ())),
    (
        "CommitToken entry order",
        CommitToken(NEW, 0, MEMB, 0, (MembEntry("P3", R, 0, 0, 0, True),)),
    ),
    (
        "CommitToken entry aru order",
        CommitToken(NEW, 0, MEMB, 0, (MembEntry("P1", R, 5, 6, 9, True),)),
    ),
    ("MergeDetect bad sender", MergeDetect(R, "a b")),
]


@pytest.mark.parametrize("case", BAD_MESSAGES, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["gather", "commit", "operational"])
def test_every_invalid_field_is_dropped_and_leaves_the_state(
    case: tuple[str, object], where: str
) -> None:
    _, msg = case
    m = _machine_in(where)
    before = snapshot(m)
    with deadline():
        out = m.handle(Received("P1", msg), 10**10)
    assert any(r.startswith("invalid ") for r in drops(out)), out
    assert all(type(e) is Record and e.kind == "drop" for e in out), out
    assert same_state(before, snapshot(m))


def test_frames_and_tokens_far_above_my_aru_are_dropped() -> None:
    """Relative bound: a frame's or token's seq may not jump far above the receiver's
    my_aru of its ring (no retransmission buffer or high_seq blown up by one packet)."""
    m = _machine_in("operational")
    ring = m.ring_id
    far = m.log.my_aru + 10**6
    for msg in (
        Mcast(ring, far, "P1", False, (GOOD_CHUNK,)),
        Token(ring, m.last_token_seq + 1, far, 0, "", (), 0, 0),
    ):
        before = snapshot(m)
        out = m.handle(Received("P1", msg), 10**10)
        assert any(r.startswith("invalid ") and "too far" in r for r in drops(out)), out
        assert same_state(before, snapshot(m))


@pytest.mark.parametrize("field", ["aru_id", "retrans_id"])
def test_a_token_naming_a_non_member_in_aru_id_or_retrans_id_is_dropped(field: str) -> None:
    """Nobody resets an aru_id or a retrans_id that names no member: the aru (safe
    delivery, flow control) or the end of recovery would wait for ever while the token
    kept circulating (the garble soak: a ring stuck in Recovery)."""
    m = _machine_in("operational")
    seq = m.log.my_aru
    fields = {"aru_id": "", "retrans_id": "", field: "Z"}
    tok = Token(
        m.ring_id, m.last_token_seq + 1, seq, seq, fields["aru_id"], (), 0, 0,
        field == "retrans_id", fields["retrans_id"], 0,
    )  # fmt: skip
    before = snapshot(m)
    out = m.handle(Received("P1", tok), 10**10)
    assert any("is not a member of the ring" in r for r in drops(out)), out
    assert same_state(before, snapshot(m))
    # ... and a member's name there is taken as before.
    ok = dataclasses.replace(tok, **{field: "P1"})
    assert not any("not a member" in r for r in drops(m.handle(Received("P1", ok), 10**10)))


def test_an_operational_member_clears_a_retrans_flg_that_names_it() -> None:
    """An honest member clears its own flag before it installs; a token reaching it once
    it is operational with the flag still naming it is a corrupted one, and the members
    still in Recovery would wait for ever for the flag to clear."""
    m = _machine_in("operational")
    seq = m.log.my_aru
    tok = Token(m.ring_id, m.last_token_seq + 1, seq, seq, "", (), 0, 0, True, "P2", seq)
    out = m.handle(Received("P1", tok), 10**10)
    if m.held is not None:  # an idle ring: the token waits the hold time, then moves on
        out += m.handle(TimerFired("token_hold"), 10**10 + m.token_hold)
    passed = [e.msg for e in out if type(e) is Send and type(e.msg) is Token]
    assert passed and not passed[0].retrans_flg and passed[0].retrans_id == ""


def test_a_token_whose_fcc_says_the_window_is_full_does_not_stop_the_ring() -> None:
    """fcc is a running sum each member corrects only by its own part: a corrupted one
    saying the window is full kept every member from broadcasting, while the token went
    round, for the rest of the ring's life (the bounded-state garble run: 28 s without a
    delivery). A member takes no more of fcc than the new frames it has seen since its
    last visit, plus its own."""
    m = _machine_in("operational")
    seq = m.sent_seq
    assert seq == m.log.my_aru
    for k in range(5):
        m.handle(Submit(f"P2:{k}", b"x", "agreed"), 10**10)
    tok = Token(m.ring_id, m.last_token_seq + 1, seq, seq, "", (), m.window_size, 0)
    out = m.handle(Received("P1", tok), 10**10)
    frames = [e.msg for e in out if type(e) is Multicast and type(e.msg) is Mcast]
    assert frames and frames[0].seq == seq + 1
    passed = [e.msg for e in out if type(e) is Send and type(e.msg) is Token]
    assert passed and passed[0].fcc == len(frames)  # the sum is right again
    # An honest fcc (the others' frames since the last visit) is taken as it is.
    assert observed_fcc(fcc=12, my_prev_trc=2, seq=110, last_seq=100) == 12
    assert observed_fcc(fcc=50, my_prev_trc=2, seq=110, last_seq=100) == 12
    assert observed_fcc(fcc=50, my_prev_trc=0, seq=0, last_seq=1 << 62) == 50  # unknown


def test_failure_to_receive_ends_a_recovery_whose_aru_never_moves() -> None:
    """The Totem paper's failure to receive holds for a rotating token, whatever the state: a
    ring in Recovery whose aru stays below seq for fail_to_recv_const visits (frames
    nobody can give it) fails the aru_id node and forms a new membership, where it
    used to stay in Recovery for good while the token went round."""
    m, ct = in_commit()
    p3 = MembEntry("P3", RingId(2, "P1"), 0, 0, 0, True)
    full = dataclasses.replace(ct, token_seq=ct.token_seq + 2, entries=(*ct.entries, p3))
    m.handle(Received("P1", full), 3)
    assert m.state is State.RECOVERY
    t = 10
    for k in range(m.fail_to_recv_const + 1):
        tok = Token(NEW, full.token_seq + 3 + 3 * k, 5, 0, "P3", (1,), 0, 0, True, "P3", 5)
        m.handle(Received("P1", tok), t)
        t += 10
        if m.state is not State.RECOVERY:
            break
    assert m.state is State.GATHER and "P3" in m.gather.my_fail_set
    assert k == m.fail_to_recv_const


def _machine_in(where: str) -> TotemMachine:
    if where == "commit":
        return in_commit()[0]
    if where == "gather":
        m = SPEC.factory(MachineContext("P2", MEMB, MEMB))
        m.handle(Start(), 0)
        return m  # type: ignore[return-value]
    from ringcast.sim import Simulation, parse_scenario

    doc = {
        "name": "op",
        "protocol": "totem",
        "nodes": list(MEMB),
        "duration": "60ms",
        "count_bytes": False,
        "network": {"latency": {"dist": "constant", "value": "100us"}},
    }
    m = Simulation(parse_scenario(doc), seed=1).run().machines["P2"]
    assert m.state is State.OPERATIONAL
    return m  # type: ignore[no-any-return]
