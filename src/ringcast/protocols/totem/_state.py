"""The membership state machine as an explicit transition table (the Totem paper, "Finite State
Machine for Membership"; the corosync Totem slides, "Totem на одном кольце. Машина состояний").

:data:`ROWS` maps ``(state, event)`` to the action the machine runs and the states
that action may lead to; :data:`TABLE` is that table as a
:class:`ringcast.core.fsm.TransitionTable`, which the machine runs on through
:class:`ringcast.core.fsm.Driver`. A pair missing
from the table is an unexpected event in that state: the machine drops it and records a
``drop`` trace event (``TABLE.unlisted``). :func:`render_mermaid` draws the table as the
Mermaid state diagram embedded in ``docs/protocols/totem.md``.
"""

from __future__ import annotations

import enum

from ringcast.core.fsm import IGNORE, TableEnum, Transition, TransitionTable


class State(TableEnum):
    """The four membership states (the Totem paper, "Four States of the Membership")."""

    OPERATIONAL = "Operational"
    GATHER = "Gather"
    COMMIT = "Commit"
    RECOVERY = "Recovery"


class Ev(TableEnum):
    """The Totem paper's events, plus the ordinary traffic of the total ordering protocol."""

    MCAST = "regular message"
    TOKEN = "regular token"
    TOKEN_ACK = "token ack"
    FOREIGN = "foreign message"
    JOIN = "join message"
    COMMIT_TOKEN = "commit token"
    TOKEN_LOSS = "token loss timeout"
    TOKEN_RETRANSMIT = "token retransmission timeout"
    JOIN_TIMEOUT = "join timeout"
    CONSENSUS_TIMEOUT = "consensus timeout"
    SILENCE_TIMEOUT = "silence timeout"
    FAIL_TO_RECV = "failure to receive"


class Action(enum.StrEnum):
    """What the machine does; one method of :class:`~.machine.TotemMachine` each
    (``_act_`` + the value)."""

    MCAST = "mcast"
    TOKEN = "token"
    FOREIGN = "foreign"
    JOIN = "join"
    COMMIT_TOKEN = "commit_token"
    TOKEN_LOSS = "token_loss"
    TOKEN_RETRANSMIT = "token_retransmit"
    TOKEN_ACK = "token_ack"
    JOIN_TIMEOUT = "join_timeout"
    CONSENSUS_TIMEOUT = "consensus_timeout"
    SILENCE_TIMEOUT = "silence_timeout"
    FAIL_TO_RECV = "fail_to_recv"


OP, GA, CO, RE = State.OPERATIONAL, State.GATHER, State.COMMIT, State.RECOVERY

ROWS: dict[tuple[State, Ev], Transition[State]] = {
    # Operational: the total ordering protocol runs; any sign of a membership change
    # (token loss, a join, a foreign message, failure to receive) starts Gather.
    (OP, Ev.MCAST): Transition(Action.MCAST, (OP,)),
    (OP, Ev.TOKEN): Transition(Action.TOKEN, (OP,)),
    (OP, Ev.FOREIGN): Transition(Action.FOREIGN, (GA,)),
    (OP, Ev.JOIN): Transition(Action.JOIN, (OP, GA)),
    (OP, Ev.TOKEN_LOSS): Transition(Action.TOKEN_LOSS, (GA,)),
    (OP, Ev.TOKEN_RETRANSMIT): Transition(Action.TOKEN_RETRANSMIT, (OP,)),
    # (not the Totem paper's: the next node answers a retransmitted token it already had)
    (OP, Ev.TOKEN_ACK): Transition(Action.TOKEN_ACK, (OP,)),
    (OP, Ev.FAIL_TO_RECV): Transition(Action.FAIL_TO_RECV, (GA,)),
    # Gather: joins are exchanged until consensus; the representative then sends the
    # commit token, a member accepting it moves to Commit.
    (GA, Ev.MCAST): Transition(Action.MCAST, (GA,)),
    (GA, Ev.FOREIGN): Transition(Action.FOREIGN, (GA,)),
    (GA, Ev.JOIN): Transition(Action.JOIN, (GA, CO)),
    (GA, Ev.COMMIT_TOKEN): Transition(Action.COMMIT_TOKEN, (GA, CO)),
    (GA, Ev.JOIN_TIMEOUT): Transition(Action.JOIN_TIMEOUT, (GA,)),
    (GA, Ev.CONSENSUS_TIMEOUT): Transition(Action.CONSENSUS_TIMEOUT, (GA, CO)),
    # (not the Totem paper's: a member of the last ring silent in Gather is failed early,
    # join_silence_const; off by default)
    (GA, Ev.SILENCE_TIMEOUT): Transition(Action.SILENCE_TIMEOUT, (GA, CO)),
    # Commit: the commit token's two rotations.
    (CO, Ev.MCAST): Transition(Action.MCAST, (CO,)),
    (CO, Ev.FOREIGN): Transition(IGNORE, (CO,)),
    (CO, Ev.JOIN): Transition(Action.JOIN, (CO, GA)),
    (CO, Ev.COMMIT_TOKEN): Transition(Action.COMMIT_TOKEN, (CO, RE)),
    (CO, Ev.TOKEN_LOSS): Transition(Action.TOKEN_LOSS, (GA,)),
    (CO, Ev.TOKEN_RETRANSMIT): Transition(Action.TOKEN_RETRANSMIT, (CO,)),
    # Recovery: old-ring messages are exchanged on the new ring, then delivered with the
    # transitional and regular configurations, atomically, on entering Operational.
    (RE, Ev.MCAST): Transition(Action.MCAST, (RE,)),
    (RE, Ev.TOKEN): Transition(Action.TOKEN, (RE, OP)),
    (RE, Ev.FOREIGN): Transition(IGNORE, (RE,)),
    (RE, Ev.JOIN): Transition(Action.JOIN, (RE, GA)),
    (RE, Ev.COMMIT_TOKEN): Transition(Action.COMMIT_TOKEN, (RE,)),
    (RE, Ev.TOKEN_LOSS): Transition(Action.TOKEN_LOSS, (GA,)),
    (RE, Ev.TOKEN_RETRANSMIT): Transition(Action.TOKEN_RETRANSMIT, (RE,)),
    (RE, Ev.TOKEN_ACK): Transition(Action.TOKEN_ACK, (RE,)),
    # (the Totem paper states failure to receive for any rotating token; a corrupted token whose
    # seq names frames nobody sent held a ring in Recovery for good without it)
    (RE, Ev.FAIL_TO_RECV): Transition(Action.FAIL_TO_RECV, (GA,)),
}

INITIAL = GA
"""Every node boots in Gather and forms its first ring through the membership protocol."""


TABLE: TransitionTable[State, Ev] = TransitionTable(
    "totem",
    ROWS,
    states=State,
    events=Ev,
    initial=[(INITIAL, "start")],
)


def render_mermaid() -> str:
    """The transition table as a Mermaid ``stateDiagram-v2`` (self-loops included; the
    ``ignore`` rows, a foreign message in Commit or Recovery, are not drawn)."""
    return TABLE.mermaid(self_loops=True)
