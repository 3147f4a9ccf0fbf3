"""Nothing from a packet is trusted (decision 25): every field the machine reads from a
token or a 911 is validated first; a bad message, of any type, in any of the seven
states, is dropped with one ``drop`` row and leaves the node exactly as it was."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ringcast.core.effects import Record
from ringcast.core.events import Received, SendFailed, Start
from ringcast.core.machine import MachineContext
from ringcast.protocols.raincore import SETTINGS
from ringcast.protocols.raincore._messages import (
    NINE11_SIGNATURE,
    TOKEN_SIGNATURE,
    Demand,
    Msg911,
    Status,
    Token,
    TokenMessage,
)
from ringcast.protocols.raincore._state import STATES, TokenState, ViewState
from ringcast.protocols.raincore.machine import RaincoreMachine, RaincoreSettings

MS = 1_000_000
NODES = ("A", "B", "C", "D")
MSG = TokenMessage("C", 1, 4, "C:4", b"x", "agreed", 40)
TOKEN = Token(TOKEN_SIGNATURE, 41, NODES, 2, 1, 3, (MSG,), (Demand("C", 1),), 4, ("C",))
CALL = Msg911(NINE11_SIGNATURE, ("C", "D", "A", "B"), 2, 3, 0, 45, Status.YES)


def _corrupt_tokens() -> list[Any]:
    t = TOKEN
    return [
        t.with_(signature=NINE11_SIGNATURE),
        t.with_(signature=str(TOKEN_SIGNATURE)),
        t.with_(sequence_number=-1),
        t.with_(sequence_number=True),
        t.with_(sequence_number="41"),
        t.with_(nodelist=()),
        t.with_(nodelist=["A", "B", "C", "D"]),
        t.with_(nodelist=("A", "B", "B", "D")),
        t.with_(nodelist=("A", "B", 3, "D")),
        t.with_(nodelist=("A", "B", "", "D")),
        t.with_(nodelist=("A", "B", "C D", "D")),
        t.with_(nodelist=tuple(f"n{i}" for i in range(5000))),
        t.with_(current=4),
        t.with_(current=-1),
        t.with_(destination=4),
        t.with_(destination=None),
        t.with_(global_view_number=-3),
        t.with_(reservation=-1),
        t.with_(reservation=0),  # signatures without a reservation
        t.with_(reserved_by=("C", "C")),
        t.with_(reserved_by=("E",)),
        t.with_(reserved_by=["C"]),
        t.with_(messages=[MSG]),
        t.with_(messages=(MSG, MSG)),
        t.with_(
            messages=tuple(
                MSG.__class__(*(f"X{i}", 1, 1, "m", b"", "agreed", 1)) for i in range(65)
            )
        ),
        t.with_(messages=(MSG.__class__("C", 1, 5, "m", b"x" * 50_000, "agreed", 40),)),
        t.with_(messages=(MSG.__class__("C", -1, 5, "m", b"x", "agreed", 40),)),
        t.with_(messages=(MSG.__class__("C", 1, 5, "m", "text", "agreed", 40),)),
        t.with_(messages=(MSG.__class__("", 1, 5, "m", b"x", "agreed", 40),)),
        t.with_(messages=(MSG.__class__("C", 1, 5, 7, b"x", "agreed", 40),)),
        t.with_(messages=(MSG.__class__("C", 1, 5, "m" * 2000, b"x", "agreed", 40),)),
        t.with_(messages=("not a message",)),
        t.with_(demand=(Demand("C", 1), Demand("C", 2))),
        t.with_(demand=(Demand("C", -1),)),
        t.with_(demand=(Demand(None, 1),)),  # type: ignore[arg-type]
        t.with_(demand=("x",)),
    ]


def _corrupt_911s() -> list[Any]:
    c = CALL
    return [
        c.with_(signature=TOKEN_SIGNATURE),
        c.with_(nodelist=()),
        c.with_(nodelist=("C", "C", "A", "B")),
        c.with_(nodelist=("C", "D", None, "B")),
        c.with_(nodelist=tuple(f"n{i}" for i in range(5000))),
        c.with_(current=4),
        c.with_(destination=-1),
        c.with_(originator=4),
        c.with_(originator="C"),
        c.with_(sequence_number=-45),
        c.with_(status=7),
        c.with_(status=1),  # a bare int, not a Status
    ]


CORRUPT = _corrupt_tokens() + _corrupt_911s() + ["garbage", None, MSG, Demand("C", 1), 42]


def _machine(state: tuple[TokenState, ViewState]) -> RaincoreMachine:
    settings = {k: v.default for k, v in SETTINGS.items()}
    ctx = MachineContext("B", NODES, NODES, settings=settings)
    m = RaincoreMachine(ctx, RaincoreSettings.from_mapping(settings))
    m.handle(Start(), 0)
    m.token_state, m.view_state = state
    m.last_token = TOKEN.with_(sequence_number=40, current=1, destination=1)
    m.token = m.last_token if state[0] is TokenState.EATING else None
    m.reserved_index = 4 if state[1] is ViewState.RESERVE else None
    m.new_nodes = ["E"]
    return m


def _fingerprint(m: RaincoreMachine) -> str:
    parts = {
        k: v for k, v in vars(m).items() if k not in ("multicast", "lock", "settings", "limits")
    }
    return repr(
        (
            sorted(parts.items()),
            sorted(vars(m.multicast).items()),
            sorted(vars(m.lock).items()),
        )
    )


def test_the_corruptions_cover_every_message_type_and_field() -> None:
    assert TOKEN.well_formed() and CALL.well_formed() and MSG.well_formed()
    assert not any(isinstance(x, Token | Msg911) and x.well_formed() for x in CORRUPT)
    assert {type(x) for x in CORRUPT} >= {Token, Msg911, TokenMessage, Demand, str, int}


@pytest.mark.parametrize("state", STATES, ids=lambda s: f"{s[0].value}-{s[1].value}")
def test_a_corrupted_message_is_dropped_and_changes_nothing_in_every_state(state: Any) -> None:
    for bad in CORRUPT:
        for event in (Received("C", bad), SendFailed("C", bad)):
            m = _machine(state)
            before = _fingerprint(m)
            out = m.handle(copy.copy(event), 5 * MS)
            assert len(out) == 1, (bad, out)
            (rec,) = out
            assert isinstance(rec, Record) and rec.kind == "drop", (bad, rec)
            assert _fingerprint(m) == before, bad
            assert m.state == state


@pytest.mark.parametrize("state", STATES, ids=lambda s: f"{s[0].value}-{s[1].value}")
def test_the_well_formed_originals_are_taken_in_every_state(state: Any) -> None:
    """The control: the same messages, intact, are not dropped as malformed."""
    for good in (TOKEN, CALL):
        m = _machine(state)
        out = m.handle(Received("C", good), 5 * MS)
        assert not any(isinstance(e, Record) and e.kind == "drop" for e in out), (good, out)


def test_a_reservation_naming_this_node_as_a_signer_it_never_was_is_not_joined() -> None:
    """A token reserving location 9 (above anything B reserved) claims B's signature
    already. Joining it appended B a second time: every token B passed on after that
    was malformed and dropped by its peers, while B, holding the newest token, vetoed
    their 911s, and the ring starved for good (the garble soak, Raincore seeds 67, 178,
    246 and 252 of 300). B opens a fresh reservation above it instead."""
    m = _machine((TokenState.HUNGRY, ViewState.CHAOS))
    m.highest_reserved = 3
    forged = TOKEN.with_(reservation=9, reserved_by=("A", "B"))
    assert forged.well_formed()
    signed = m._reserve(forged)
    assert signed.reserved_by == ("B",) and signed.reservation == 10
    assert signed.well_formed()
    # an honest open reservation is joined, as before
    assert m._reserve(TOKEN.with_(reservation=20, reserved_by=("A",))).reserved_by == ("A", "B")
