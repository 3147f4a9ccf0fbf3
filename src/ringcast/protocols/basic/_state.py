"""``basic``'s transition table: one state, the member, and what each event does in it.

``basic`` has no protocol state of its own (membership is the failure detector's opinion),
so its table has one state; it is written down all the same so that ``basic``, the
smallest family, runs on the same :class:`~ringcast.core.fsm.Driver` as the others and
shows a newcomer the convention in a dozen lines.
"""

from __future__ import annotations

import enum

from ringcast.core.fsm import IGNORE, TableEnum, Transition, TransitionTable


class State(TableEnum):
    MEMBER = "member"


class Ev(TableEnum):
    START = "start"
    DATA = "data received"
    SUBMIT = "submit"
    SUSPECTED = "suspected"
    UNSUSPECTED = "unsuspected"
    SEND_FAILED = "send failed"


class Action(enum.StrEnum):
    """One method of :class:`~.machine.BasicMachine` each."""

    START = "start"
    DELIVER = "deliver"
    SEND = "send"
    REMOVE = "remove"
    ADD = "add"


MB = State.MEMBER

ROWS: dict[tuple[State, Ev], Transition[State]] = {
    (MB, Ev.START): Transition(Action.START, (MB,)),
    (MB, Ev.DATA): Transition(Action.DELIVER, (MB,)),
    (MB, Ev.SUBMIT): Transition(Action.SEND, (MB,)),
    (MB, Ev.SUSPECTED): Transition(Action.REMOVE, (MB,)),
    (MB, Ev.UNSUSPECTED): Transition(Action.ADD, (MB,)),
    # The reliable layer has already let its window go.
    (MB, Ev.SEND_FAILED): Transition(IGNORE, (MB,)),
}

TABLE: TransitionTable[State, Ev] = TransitionTable(
    "basic", ROWS, states=State, events=Ev, initial=[(MB, "start")]
)
