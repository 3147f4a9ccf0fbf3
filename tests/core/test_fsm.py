"""core.fsm: one transition-table convention for every protocol family."""

from __future__ import annotations

import enum

import pytest

from ringcast.core.effects import Record
from ringcast.core.fsm import IGNORE, Transition, TransitionTable


class St(enum.Enum):
    A = "Alpha"
    B = "Beta"


class Ev(enum.Enum):
    GO = "go"
    STAY = "stay"
    TICK = "tick"


TABLE = TransitionTable(
    "toy",
    {
        (St.A, Ev.GO): Transition("go", (St.B,)),
        (St.A, Ev.TICK): Transition(IGNORE, (St.A,)),
        (St.B, Ev.GO): Transition("go", (St.A, St.B)),
        (St.B, Ev.STAY): Transition("stay", (St.B,)),
    },
    states=list(St),
    events=list(Ev),
    initial=[(St.A, "start")],
)


def test_lookup_and_rows() -> None:
    assert TABLE.lookup(St.A, Ev.GO) == Transition("go", (St.B,))
    assert TABLE.lookup(St.A, Ev.STAY) is None
    assert set(TABLE.row(St.B)) == {Ev.GO, Ev.STAY}


def test_check_reports_a_target_outside_the_table_as_an_invariant_row() -> None:
    assert TABLE.check(St.A, Ev.GO, St.B) is None
    assert TABLE.check(St.A, Ev.TICK, St.A) is None
    bad = TABLE.check(St.A, Ev.GO, St.A)
    assert bad == Record.of(
        "invariant",
        error="transition not in table",
        table="toy",
        event="go",
        before="Alpha",
        after="Alpha",
    )
    # an unlisted pair is never "in the table" either
    assert TABLE.check(St.A, Ev.STAY, St.A) is not None


def test_unlisted_event_is_a_drop_row() -> None:
    assert TABLE.unlisted(St.A, Ev.STAY, src="X") == Record.of(
        "drop", reason="stay in Alpha", src="X"
    )


def test_mermaid_draws_every_listed_edge_but_ignore_rows() -> None:
    assert TABLE.mermaid() == (
        "stateDiagram-v2\n"
        "    [*] --> Alpha: start\n"
        "    Alpha --> Beta: go\n"
        "    Beta --> Alpha: go\n"
        "    Beta --> Beta: go, stay\n"
    )
    fenced = TABLE.mermaid(self_loops=False, fenced=True)
    assert fenced.startswith("```mermaid\n") and fenced.endswith("```\n")
    assert "Beta --> Beta" not in fenced


def test_a_table_naming_an_unknown_state_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown"):
        TransitionTable(
            "bad", {(St.A, Ev.GO): Transition("go", ("Gamma",))}, states=list(St), events=list(Ev)
        )
