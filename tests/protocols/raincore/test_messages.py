"""The token and 911 message formats (the Raincore paper, Figures 6-8) on the wire codec."""

from __future__ import annotations

from ringcast.core.codec import decode, encode, registered_types
from ringcast.core.events import Received
from ringcast.protocols.raincore._messages import (
    MESSAGE_TYPES,
    NINE11_SIGNATURE,
    TOKEN_SIGNATURE,
    DeliveredUpTo,
    Demand,
    GlobalViewEntry,
    Msg911,
    Snapshot,
    Status,
    Token,
    TokenMessage,
)

from .harness import Net

ENTRY = TokenMessage("A", 2, 7, "A:7", b"\x00payload", "agreed", 41)
TOKEN = Token(
    TOKEN_SIGNATURE,
    41,
    ("A", "C", "B", "D"),
    1,
    2,
    3,
    (ENTRY,),
    (Demand("A", 5), Demand("C", 1)),
    4,
    ("C", "B"),
)
CALL = Msg911(NINE11_SIGNATURE, ("B", "C", "D", "A"), 1, 2, 0, 13, Status.REJECT)
SAMPLES = [
    ENTRY,
    TOKEN,
    CALL,
    GlobalViewEntry(2, ("A", "C", "D")),
    DeliveredUpTo("B", 1, 9),
    Demand("D", 12),
    Snapshot(
        3,
        (GlobalViewEntry(1, ("A", "B")), GlobalViewEntry(2, (), True)),
        2,
        TOKEN,
        ("A", "B"),
        2,
        (DeliveredUpTo("A", 1, 2),),
    ),
    Snapshot(1, (), 0, None, (), 0, ()),
]


def test_every_raincore_message_round_trips_through_the_codec() -> None:
    assert {type(s) for s in SAMPLES} == set(MESSAGE_TYPES)
    for msg in SAMPLES:
        frame = decode(encode(msg, sender="A", cluster_id=5))
        assert frame.msg == msg
        assert frame.sender == "A"


def test_raincore_type_ids_are_in_the_reserved_range() -> None:
    ids = {tid for tid, cls in registered_types().items() if cls in MESSAGE_TYPES}
    assert len(ids) == len(MESSAGE_TYPES)
    assert all(0x0100 <= tid <= 0x01FF for tid in ids)


def test_token_carries_the_figure_6_fields() -> None:
    assert TOKEN.current_node == "C"
    assert TOKEN.destination_node == "B"
    assert TOKEN.well_formed()
    assert CALL.originating_node == "B" and CALL.destination_node == "D"
    assert CALL.well_formed()


def test_malformed_messages_are_dropped_not_fatal() -> None:
    net = Net(("A", "B", "C")).start().run(1)
    bad = [
        TOKEN.with_(signature=1),
        TOKEN.with_(nodelist=()),
        TOKEN.with_(destination=9),
        TOKEN.with_(nodelist=("A", "A", "B", "C")),
        CALL.with_(originator=-1),
        CALL.with_(signature=TOKEN_SIGNATURE),
        "garbage",
        ENTRY,
    ]
    for msg in bad:
        net.feed("B", Received("C", msg))
    drops = net.records("B", "drop")
    assert len(drops) == len(bad)
    # The ring is unharmed: the token keeps circulating.
    before = net.inner("B").last_token_seq
    net.run(40)
    assert net.inner("B").last_token_seq > before
