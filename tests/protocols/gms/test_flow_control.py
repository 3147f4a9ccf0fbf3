"""GMS flow control (``docs/protocols/gms.md``, "Flow control"), as JGroups' MFC: a
member multicasts at most ``window`` messages beyond what every other member said it
delivered, receivers credit what they delivered every ``window // 4`` messages of a
sender, and the host is held (``Backpressure``) from ``window`` in flight until
``window // 2``."""

from __future__ import annotations

from ringcast.core.effects import Backpressure, Record, Send
from ringcast.core.events import Received, Start, Submit
from ringcast.core.machine import MachineContext
from ringcast.protocols.gms import SPEC
from ringcast.protocols.gms._messages import Credit, Msg
from ringcast.protocols.gms.machine import GmsMachine

NODES = ("A", "B", "C")
WINDOW = 8


def _member(node: str) -> GmsMachine:
    m = GmsMachine(MachineContext(node, NODES, NODES), SPEC.resolve_settings({"window": WINDOW}))
    m.handle(Start(), 0)
    assert m.view is not None and m.view.view_id == "A:1"
    return m


def test_the_sender_is_held_at_a_window_in_flight_until_every_member_credits_half() -> None:
    a = _member("A")
    for k in range(1, WINDOW):
        assert Backpressure(True) not in a.handle(Submit(f"A:{k}", b"x", "fifo"), k)
    assert Backpressure(True) in a.handle(Submit(f"A:{WINDOW}", b"x", "fifo"), WINDOW)
    # one member's credit is not enough: the other still has the whole window to deliver
    assert a.handle(Received("B", Credit("A:1", WINDOW)), 20) == []
    # the other's, to just over half the window: still held
    assert a.handle(Received("C", Credit("A:1", WINDOW // 2 - 1)), 21) == []
    assert a.handle(Received("C", Credit("A:1", WINDOW // 2)), 22) == [Backpressure(False)]
    assert set(a.data.sent) == set(range(WINDOW // 2 + 1, WINDOW + 1))  # the credited freed


def test_a_receiver_credits_a_sender_every_quarter_window_it_delivers() -> None:
    b = _member("B")
    credits = []
    for k in range(1, WINDOW + 1):
        out = b.handle(Received("A", Msg("A:1", k, f"A:{k}", b"x", "fifo")), k)
        credits += [e for e in out if type(e) is Send and type(e.msg) is Credit]
    assert [(e.dst, e.msg.delivered) for e in credits] == [
        ("A", k) for k in range(WINDOW // 4, WINDOW + 1, WINDOW // 4)
    ]


def test_a_stable_digest_credits_as_well() -> None:
    from ringcast.protocols.gms._messages import Stable

    a = _member("A")
    for k in range(1, WINDOW + 1):
        a.handle(Submit(f"A:{k}", b"x", "fifo"), k)
    assert a.blocked
    a.handle(Received("B", Stable("A:1", NODES, 0, (WINDOW, 0, 0))), 30)
    out = a.handle(Received("C", Stable("A:1", NODES, 0, (WINDOW, 0, 0))), 31)
    assert out == [Backpressure(False)] and a.data.sent == {}


def test_a_credit_of_another_view_or_a_malformed_one_changes_nothing() -> None:
    a = _member("A")
    for k in range(1, WINDOW + 1):
        a.handle(Submit(f"A:{k}", b"x", "fifo"), k)
    assert a.handle(Received("B", Credit("A:9", WINDOW)), 20) == []  # not this view
    assert a.handle(Received("C", Credit("A:9", WINDOW)), 21) == []
    (drop,) = a.handle(Received("B", Credit("A:1", -1)), 22)
    assert type(drop) is Record and drop.kind == "drop"
    assert a.blocked and len(a.data.sent) == WINDOW


def test_a_new_view_lets_the_sender_go() -> None:
    from ringcast.protocols.gms._views import parse_view

    a = _member("A")
    for k in range(1, WINDOW + 1):
        a.handle(Submit(f"A:{k}", b"x", "fifo"), k)
    assert a.blocked
    out: list = []
    a._install(parse_view("A:2", ("A", "B")), out)  # C gone: its credits never come
    a._pace(out)
    assert Backpressure(False) in out and not a.blocked
