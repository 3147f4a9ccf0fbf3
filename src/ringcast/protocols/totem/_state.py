"""The membership state machine as an explicit transition table (the Totem paper, "Finite State
Machine for Membership"; the corosync Totem slides, "Totem на одном кольце. Машина состояний").

:data:`TRANSITIONS` maps ``(state, event)`` to the action the machine runs and the states
that action may lead to; :data:`TABLE` is that table as a
:class:`ringcast.core.fsm.TransitionTable`, on which the machine dispatches. A pair missing
from the table is an unexpected event in that state: the machine drops it and records a
``drop`` trace event (``TABLE.unlisted``). :func:`render_mermaid` draws the table as the
Mermaid state diagram embedded in ``docs/protocols/totem.md``.
"""

from __future__ import annotations

import enum

from ringcast.core.fsm import IGNORE, Transition, TransitionTable


class State(enum.Enum):
    """The four membership states (the Totem paper, "Four States of the Membership")."""

    OPERATIONAL = "Operational"
    GATHER = "Gather"
    COMMIT = "Commit"
    RECOVERY = "Recovery"


class Ev(enum.Enum):
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


OP, GA, CO, RE = State.OPERATIONAL, State.GATHER, State.COMMIT, State.RECOVERY

TRANSITIONS: dict[tuple[State, Ev], Transition[State]] = {
    # Operational: the total ordering protocol runs; any sign of a membership change
    # (token loss, a join, a foreign message, failure to receive) starts Gather.
    (OP, Ev.MCAST): Transition("mcast", (OP,)),
    (OP, Ev.TOKEN): Transition("token", (OP,)),
    (OP, Ev.FOREIGN): Transition("foreign", (GA,)),
    (OP, Ev.JOIN): Transition("join", (OP, GA)),
    (OP, Ev.TOKEN_LOSS): Transition("token_loss", (GA,)),
    (OP, Ev.TOKEN_RETRANSMIT): Transition("token_retransmit", (OP,)),
    # (not the Totem paper's: the next node answers a retransmitted token it already had)
    (OP, Ev.TOKEN_ACK): Transition("token_ack", (OP,)),
    (OP, Ev.FAIL_TO_RECV): Transition("fail_to_recv", (GA,)),
    # Gather: joins are exchanged until consensus; the representative then sends the
    # commit token, a member accepting it moves to Commit.
    (GA, Ev.MCAST): Transition("mcast", (GA,)),
    (GA, Ev.FOREIGN): Transition("foreign", (GA,)),
    (GA, Ev.JOIN): Transition("join", (GA, CO)),
    (GA, Ev.COMMIT_TOKEN): Transition("commit_token", (GA, CO)),
    (GA, Ev.JOIN_TIMEOUT): Transition("join_timeout", (GA,)),
    (GA, Ev.CONSENSUS_TIMEOUT): Transition("consensus_timeout", (GA, CO)),
    # (not the Totem paper's: a member of the last ring silent in Gather is failed early,
    # join_silence_const; off by default)
    (GA, Ev.SILENCE_TIMEOUT): Transition("silence_timeout", (GA, CO)),
    # Commit: the commit token's two rotations.
    (CO, Ev.MCAST): Transition("mcast", (CO,)),
    (CO, Ev.FOREIGN): Transition(IGNORE, (CO,)),
    (CO, Ev.JOIN): Transition("join", (CO, GA)),
    (CO, Ev.COMMIT_TOKEN): Transition("commit_token", (CO, RE)),
    (CO, Ev.TOKEN_LOSS): Transition("token_loss", (GA,)),
    (CO, Ev.TOKEN_RETRANSMIT): Transition("token_retransmit", (CO,)),
    # Recovery: old-ring messages are exchanged on the new ring, then delivered with the
    # transitional and regular configurations, atomically, on entering Operational.
    (RE, Ev.MCAST): Transition("mcast", (RE,)),
    (RE, Ev.TOKEN): Transition("token", (RE, OP)),
    (RE, Ev.FOREIGN): Transition(IGNORE, (RE,)),
    (RE, Ev.JOIN): Transition("join", (RE, GA)),
    (RE, Ev.COMMIT_TOKEN): Transition("commit_token", (RE,)),
    (RE, Ev.TOKEN_LOSS): Transition("token_loss", (GA,)),
    (RE, Ev.TOKEN_RETRANSMIT): Transition("token_retransmit", (RE,)),
    (RE, Ev.TOKEN_ACK): Transition("token_ack", (RE,)),
    # (the Totem paper states failure to receive for any rotating token; a corrupted token whose
    # seq names frames nobody sent held a ring in Recovery for good without it)
    (RE, Ev.FAIL_TO_RECV): Transition("fail_to_recv", (GA,)),
}

INITIAL = GA
"""Every node boots in Gather and forms its first ring through the membership protocol."""


TABLE: TransitionTable[State, Ev] = TransitionTable(
    "totem",
    TRANSITIONS,
    states=State,
    events=Ev,
    initial=[(INITIAL, "start")],
)


def render_mermaid() -> str:
    """The transition table as a Mermaid ``stateDiagram-v2`` (self-loops included; the
    ``ignore`` rows, a foreign message in Commit or Recovery, are not drawn)."""
    return TABLE.mermaid(self_loops=True)
