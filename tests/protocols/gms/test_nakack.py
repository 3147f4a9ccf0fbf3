"""NAKACK2 against its own member's lies (gms.md, decision 16): a member whose STABLE
digest said it had messages it had not (a corrupted digest) freed them at their sender
and could never get them again; its sender's stream stalled there for the rest of the
view, and every later message waited in ``pending``."""

from __future__ import annotations

from ringcast.core.effects import Deliver, Effect, Record, Send
from ringcast.protocols.gms._messages import Msg, Stable, XmitGone, XmitReq
from ringcast.protocols.gms._views import GView
from ringcast.protocols.gms.nakack import MAX_AHEAD, Nakack

VIEW = GView("A", 1, ("A", "B", "C"))
VID = VIEW.view_id


def node(me: str) -> Nakack:
    n = Nakack(me, xmit_interval=10)
    n.install(VIEW, 0, [])
    return n


def msg(seqno: int) -> Msg:
    return Msg(VID, seqno, f"A:{seqno}", b"x", "fifo")


def sends(out: list[Effect]) -> list[object]:
    return [e.msg for e in out if type(e) is Send]


def test_a_sender_answers_a_request_for_freed_messages_and_the_liar_skips_the_gap() -> None:
    a, b = node("A"), node("B")
    out: list[Effect] = []
    for _ in range(5):
        a.submit(f"A:{a.seqno + 1}", b"x", "fifo", out)
    # B and C both "delivered" all five: B's digest lied, B got only 1 and 2.
    a.on_stable("B", Stable(VID, VIEW.members, 0, (5, 0, 0)), 0, out)
    a.on_stable("C", Stable(VID, VIEW.members, 0, (5, 0, 0)), 0, out)
    assert a.sent == {} and a.freed == 5
    for s in (1, 2, 4, 6):
        b.on_msg("A", msg(s), 100, out)
    assert b.rx["A"].delivered == 2 and sorted(b.rx["A"].pending) == [4, 6]
    req = XmitReq(VID, 3, 6)
    answer = []
    a.on_xmit_req("B", req, answer)
    gone = [m for m in sends(answer) if type(m) is XmitGone]
    assert gone == [XmitGone(VID, 6)]
    out = []
    b.on_xmit_gone("A", gone[0], out)
    # 3 and 5 are lost to B; 4 and 6, which it holds, are delivered in order.
    assert [r.fields for r in out if type(r) is Record] == [{"src": "A", "first": 3, "last": 3}]
    assert [d.msg_id for d in out if type(d) is Deliver] == ["A:4"]
    assert b.rx["A"].delivered == 4


def test_an_honest_receivers_late_request_changes_nothing() -> None:
    b = node("B")
    out: list[Effect] = []
    for s in (1, 2, 3, 5):
        b.on_msg("A", msg(s), 100, out)
    out = []
    b.on_xmit_gone("A", XmitGone(VID, 3), out)  # below what B delivered: a late answer
    b.on_xmit_gone("A", XmitGone("A:0", 9), out)  # another view
    assert out == [] and b.rx["A"].delivered == 3


def test_a_corrupted_seqno_or_digest_does_not_keep_a_gap_open() -> None:
    b = node("B")
    out: list[Effect] = []
    b.on_msg("A", msg(MAX_AHEAD + 1), 0, out)
    assert b.rx["A"].pending == {}
    assert any(type(r) is Record and r.fields["reason"] == "Msg seqno far ahead" for r in out)
    # A digest saying A sent 2^62 messages, then A's true one: B stops asking for them.
    b.on_stable("A", Stable(VID, VIEW.members, 1 << 62, (0, 0, 0)), 0, out)
    b.on_stable("A", Stable(VID, VIEW.members, 0, (0, 0, 0)), 50, out)
    out = []
    b.on_msg("A", msg(1), 100, out)
    assert not [m for m in sends(out) if type(m) is XmitReq]
