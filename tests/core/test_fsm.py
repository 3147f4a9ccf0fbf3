"""core.fsm: one transition-table convention for every protocol family."""

from __future__ import annotations

import enum

import pytest

from ringcast.core.effects import Effect, Record, StateChanged
from ringcast.core.fsm import IGNORE, Driver, Transition, TransitionTable


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


class Toy:
    """A machine on TABLE: ``go`` moves to ``to``; ``stay`` raises ``go`` inside itself."""

    def __init__(self) -> None:
        self.state = St.A
        self.to = St.B
        self.calls: list[tuple[int, tuple[object, ...]]] = []
        self.fsm = Driver(TABLE, self, {"go": self._go, "stay": self._stay})

    def _go(self, now: int, *args: object) -> list[Effect]:
        self.calls.append((now, args))
        self.state = self.to
        return [Record.of("went", to=self.to.value)]

    def _stay(self, now: int) -> list[Effect]:
        self.to = St.A
        return self.fsm.step(Ev.GO, now, "inner")


def test_driver_runs_the_listed_action_as_a_bound_method() -> None:
    m = Toy()
    assert m.fsm.step(Ev.GO, 5, "x") == [Record.of("went", to="Beta")]
    assert m.calls == [(5, ("x",))] and m.state is St.B


def test_driver_drops_an_unlisted_pair_and_ignores_an_ignore_row() -> None:
    m = Toy()
    assert m.fsm.step(Ev.STAY, 1) == [Record.of("drop", reason="stay in Alpha")]
    assert m.fsm.step(Ev.TICK, 1) == [] and m.fsm.dropped == 1 and m.state is St.A


def test_driver_reports_a_landing_outside_the_row_and_carries_on() -> None:
    m = Toy()
    m.to = St.A  # (A, go) lists only B
    out = m.fsm.step(Ev.GO, 1)
    assert out[-1].kind == "invariant" and out[-1].fields["after"] == "Alpha"  # type: ignore[union-attr]


def test_a_nested_step_is_checked_on_its_own_not_against_the_enclosing_row() -> None:
    m = Toy()
    m.state = St.B
    # (B, stay) lists only B, but the inner (B, go) may go to A: no invariant row.
    assert m.fsm.step(Ev.STAY, 1) == [Record.of("went", to="Alpha")]
    assert m.state is St.A


def test_moved_checks_each_move_against_the_event_in_hand() -> None:
    m = Toy()
    assert m.fsm.moved(St.B) is None  # outside a step nothing is checked
    seen: list[object] = []

    def go(now: int, *args: object) -> list[Effect]:
        seen.append(m.fsm.moved(St.B))
        m.state = St.B
        seen.append(m.fsm.moved(St.A))  # (A, go) does not list A, but (B, go) does
        m.state = St.A
        return []

    m.fsm = Driver(TABLE, m, {"go": go, "stay": m._stay})
    assert m.fsm.step(Ev.GO, 1) == []
    assert seen == [None, None]
    m.state = St.B
    m.fsm.step(Ev.STAY, 1)  # (B, stay) -> inner (B, go): B then A, both listed
    assert seen[2:] == [None, None]


def test_a_driver_without_a_method_for_an_action_is_refused() -> None:
    with pytest.raises(ValueError, match="stay"):
        Driver(TABLE, Toy(), {"go": lambda now: []})


def test_a_driver_over_one_table_per_role_looks_each_state_up_in_its_role() -> None:
    # One role per state; each table lists the other's state as a target.
    role_a = TransitionTable(
        "role_a", {(St.A, Ev.GO): Transition("go", (St.B,))}, states=list(St), events=list(Ev)
    )
    role_b = TransitionTable(
        "role_b", {(St.B, Ev.STAY): Transition("stay", (St.B,))}, states=list(St), events=list(Ev)
    )
    m = Toy()
    m.fsm = Driver({St.A: role_a, St.B: role_b}, m, {"go": m._go, "stay": lambda now: []})
    assert m.fsm.lists(St.A, Ev.GO) and not m.fsm.lists(St.A, Ev.STAY)
    assert m.fsm.step(Ev.GO, 1) == [Record.of("went", to="Beta")]
    assert m.fsm.step(Ev.GO, 1) == [Record.of("drop", reason="go in Beta")]
    assert m.fsm.step(Ev.STAY, 1) == []


def test_driver_writes_state_changed_from_the_machines_status() -> None:
    m = Toy()
    m.fsm = Driver(
        TABLE, m, {"go": m._go, "stay": m._stay}, status=lambda: {"state": m.state.value}
    )
    # at a moment of the family's own, with what the report adds
    assert m.fsm.state_changed(reason="start") == StateChanged.of(state="Alpha", reason="start")
    # after an event: only when the status differs from the last one reported
    out: list[Effect] = []
    m.fsm.report_change(out)
    assert out == []  # Alpha was just reported
    m.fsm.step(Ev.GO, 1)
    m.fsm.report_change(out)
    m.fsm.report_change(out)
    assert out == [StateChanged.of(state="Beta")]


def test_a_driver_without_status_says_so() -> None:
    with pytest.raises(TypeError, match="status="):
        Toy().fsm.state_changed()
