"""The Raincore state machine as data: Figure 9, Figure 10 and Figure 11 of the Raincore paper.

Each node is in one View State (Agreement, Chaos, Reserve) and one Token State
(Eating, Hungry, Starving); "two of the nine states are not reachable, so it is
actually a seven-state state machine". :data:`ROWS` lists, for each of the
seven states and each of the eight events of the pseudo code, the action the machine
takes and every state the action may end in. :mod:`.machine` runs on this table
(:data:`TABLE`, a :class:`ringcast.core.fsm.TransitionTable` built from it) through
:class:`ringcast.core.fsm.Driver`, which checks after each step that the node landed in
one of the listed states; :func:`mermaid` renders the
table as the Figure 11 diagram of the docs.
"""

from __future__ import annotations

import enum

from ringcast.core.fsm import IGNORE, TableEnum, Transition, TransitionTable


class TokenState(enum.StrEnum):
    """Figure 10: the node's situation with regard to the ownership of the token."""

    EATING = "eating"
    HUNGRY = "hungry"
    STARVING = "starving"


class ViewState(enum.StrEnum):
    """Figure 9: the node's situation with regard to agreement on the local views."""

    AGREEMENT = "agreement"
    CHAOS = "chaos"
    RESERVE = "reserve"

    @property
    def letter(self) -> str:
        """The one-letter form of Figures 12-14: ``ABCD(a)11``."""
        return self.value[0]


State = tuple[TokenState, ViewState]

E, H, S = TokenState.EATING, TokenState.HUNGRY, TokenState.STARVING
AGR, CHA, RES = ViewState.AGREEMENT, ViewState.CHAOS, ViewState.RESERVE

EATING_AGREEMENT: State = (E, AGR)
HUNGRY_AGREEMENT: State = (H, AGR)
EATING_RESERVE: State = (E, RES)
HUNGRY_RESERVE: State = (H, RES)
EATING_CHAOS: State = (E, CHA)
HUNGRY_CHAOS: State = (H, CHA)
STARVING_CHAOS: State = (S, CHA)

STATES: tuple[State, ...] = (
    EATING_AGREEMENT,
    HUNGRY_AGREEMENT,
    EATING_RESERVE,
    HUNGRY_RESERVE,
    EATING_CHAOS,
    HUNGRY_CHAOS,
    STARVING_CHAOS,
)
"""The seven reachable states, in the order the Raincore paper lists them."""


class Ev(TableEnum):
    """The eight events of the pseudo code ("1. Initialization" ... "8. Starving timeout")."""

    INITIALIZATION = "Initialization"
    TOKEN_RECEIVED = "Token received"
    NINE11_RECEIVED = "911 received"
    TOKEN_DELIVERY_FAILURE = "Token delivery failure"
    NINE11_DELIVERY_FAILURE = "911 delivery failure"
    EATING_TIMEOUT = "Eating timeout"
    HUNGRY_TIMEOUT = "Hungry timeout"
    STARVING_TIMEOUT = "Starving timeout"


class Action(enum.StrEnum):
    """What the machine does; one method of :class:`~.machine.RaincoreMachine` each."""

    INITIALIZE = "initialize"  # 1: create the token (first member) or wait / call 911
    ACCEPT_TOKEN = "accept_token"  # 2: take a valid token, run the view-state step
    DROP_TOKEN = "drop_token"  # 2: "If (tokenState == EATING) Drop the token"
    HANDLE_911 = "handle_911"  # 3: regenerate, veto, forward, or queue a join
    REROUTE_TOKEN = "reroute_token"  # 4: drop the dead node, resend (or commit alone)
    DISCARD_RETURNED_TOKEN = "discard_returned_token"  # 4 when no token is out (decision)
    REROUTE_911 = "reroute_911"  # 5: "Update 911 destination pointer; Send 911"
    PASS_TOKEN = "pass_token"  # 6: add newNodes, send the token on, become Hungry
    STARVE = "starve"  # 7: Starving + Chaos, 911 with status YES
    CALL_911_AGAIN = "call_911_again"  # 8: "Restart STARVING timeout ... Send out 911"


def _t(action: Action, *targets: State) -> Transition[State]:
    """The action (by its method name) and every state it can end in."""
    return Transition(action.value, targets)


# A stale timer of a state the node has left does nothing.
_IGNORE_IN = {s: Transition(IGNORE, (s,)) for s in STATES}

# The explicit table: 7 states x 8 events. Read a row as "in this state, on this event,
# do this, and end in one of these states".
_BY_STATE: dict[State, dict[Ev, Transition[State]]] = {
    EATING_AGREEMENT: {
        # The first member boots here and creates the token (Fig. 12's ABCD(a)11).
        Ev.INITIALIZATION: _t(Action.INITIALIZE, EATING_AGREEMENT),
        Ev.TOKEN_RECEIVED: _t(Action.DROP_TOKEN, EATING_AGREEMENT),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, EATING_AGREEMENT),
        Ev.TOKEN_DELIVERY_FAILURE: _t(Action.DISCARD_RETURNED_TOKEN, EATING_AGREEMENT),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, EATING_AGREEMENT),
        Ev.EATING_TIMEOUT: _t(Action.PASS_TOKEN, HUNGRY_AGREEMENT, HUNGRY_CHAOS, EATING_AGREEMENT),
        Ev.HUNGRY_TIMEOUT: _IGNORE_IN[EATING_AGREEMENT],
        Ev.STARVING_TIMEOUT: _IGNORE_IN[EATING_AGREEMENT],
    },
    HUNGRY_AGREEMENT: {
        # The other members boot here and wait for the token.
        Ev.INITIALIZATION: _t(Action.INITIALIZE, HUNGRY_AGREEMENT),
        Ev.TOKEN_RECEIVED: _t(
            Action.ACCEPT_TOKEN, EATING_AGREEMENT, EATING_CHAOS, HUNGRY_AGREEMENT
        ),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, HUNGRY_AGREEMENT),
        Ev.TOKEN_DELIVERY_FAILURE: _t(
            Action.REROUTE_TOKEN, HUNGRY_CHAOS, EATING_AGREEMENT, STARVING_CHAOS, HUNGRY_AGREEMENT
        ),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, HUNGRY_AGREEMENT),
        Ev.EATING_TIMEOUT: _IGNORE_IN[HUNGRY_AGREEMENT],
        Ev.HUNGRY_TIMEOUT: _t(Action.STARVE, STARVING_CHAOS),
        Ev.STARVING_TIMEOUT: _IGNORE_IN[HUNGRY_AGREEMENT],
    },
    EATING_RESERVE: {
        Ev.INITIALIZATION: _IGNORE_IN[EATING_RESERVE],
        Ev.TOKEN_RECEIVED: _t(Action.DROP_TOKEN, EATING_RESERVE),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, EATING_RESERVE),
        Ev.TOKEN_DELIVERY_FAILURE: _t(Action.DISCARD_RETURNED_TOKEN, EATING_RESERVE),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, EATING_RESERVE),
        Ev.EATING_TIMEOUT: _t(Action.PASS_TOKEN, HUNGRY_RESERVE, HUNGRY_CHAOS, EATING_RESERVE),
        Ev.HUNGRY_TIMEOUT: _IGNORE_IN[EATING_RESERVE],
        Ev.STARVING_TIMEOUT: _IGNORE_IN[EATING_RESERVE],
    },
    HUNGRY_RESERVE: {
        Ev.INITIALIZATION: _IGNORE_IN[HUNGRY_RESERVE],
        Ev.TOKEN_RECEIVED: _t(
            Action.ACCEPT_TOKEN, EATING_AGREEMENT, EATING_CHAOS, EATING_RESERVE, HUNGRY_RESERVE
        ),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, HUNGRY_RESERVE),
        Ev.TOKEN_DELIVERY_FAILURE: _t(
            Action.REROUTE_TOKEN, HUNGRY_CHAOS, EATING_AGREEMENT, STARVING_CHAOS, HUNGRY_RESERVE
        ),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, HUNGRY_RESERVE),
        Ev.EATING_TIMEOUT: _IGNORE_IN[HUNGRY_RESERVE],
        Ev.HUNGRY_TIMEOUT: _t(Action.STARVE, STARVING_CHAOS),
        Ev.STARVING_TIMEOUT: _IGNORE_IN[HUNGRY_RESERVE],
    },
    EATING_CHAOS: {
        Ev.INITIALIZATION: _IGNORE_IN[EATING_CHAOS],
        Ev.TOKEN_RECEIVED: _t(Action.DROP_TOKEN, EATING_CHAOS),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, EATING_CHAOS),
        Ev.TOKEN_DELIVERY_FAILURE: _t(Action.DISCARD_RETURNED_TOKEN, EATING_CHAOS),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, EATING_CHAOS),
        Ev.EATING_TIMEOUT: _t(Action.PASS_TOKEN, HUNGRY_CHAOS, EATING_CHAOS),
        Ev.HUNGRY_TIMEOUT: _IGNORE_IN[EATING_CHAOS],
        Ev.STARVING_TIMEOUT: _IGNORE_IN[EATING_CHAOS],
    },
    HUNGRY_CHAOS: {
        Ev.INITIALIZATION: _IGNORE_IN[HUNGRY_CHAOS],
        Ev.TOKEN_RECEIVED: _t(Action.ACCEPT_TOKEN, EATING_CHAOS, EATING_RESERVE, HUNGRY_CHAOS),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, HUNGRY_CHAOS),
        Ev.TOKEN_DELIVERY_FAILURE: _t(
            Action.REROUTE_TOKEN, HUNGRY_CHAOS, EATING_AGREEMENT, STARVING_CHAOS
        ),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, HUNGRY_CHAOS),
        Ev.EATING_TIMEOUT: _IGNORE_IN[HUNGRY_CHAOS],
        Ev.HUNGRY_TIMEOUT: _t(Action.STARVE, STARVING_CHAOS),
        Ev.STARVING_TIMEOUT: _IGNORE_IN[HUNGRY_CHAOS],
    },
    STARVING_CHAOS: {
        # A joining node, and a node recovered with its state, boot here (Fig. 14).
        Ev.INITIALIZATION: _t(Action.INITIALIZE, STARVING_CHAOS),
        Ev.TOKEN_RECEIVED: _t(Action.ACCEPT_TOKEN, EATING_CHAOS, EATING_RESERVE, STARVING_CHAOS),
        Ev.NINE11_RECEIVED: _t(Action.HANDLE_911, EATING_CHAOS, STARVING_CHAOS),
        Ev.TOKEN_DELIVERY_FAILURE: _t(Action.DISCARD_RETURNED_TOKEN, STARVING_CHAOS),
        Ev.NINE11_DELIVERY_FAILURE: _t(Action.REROUTE_911, STARVING_CHAOS, EATING_CHAOS),
        Ev.EATING_TIMEOUT: _IGNORE_IN[STARVING_CHAOS],
        Ev.HUNGRY_TIMEOUT: _IGNORE_IN[STARVING_CHAOS],
        Ev.STARVING_TIMEOUT: _t(Action.CALL_911_AGAIN, STARVING_CHAOS, EATING_CHAOS),
    },
}


class ViewStep(enum.Enum):
    """What the view-state part of "2. Token Received" does besides changing state."""

    NONE = "none"
    RESERVE = "reserve"  # "increment globalViewNumber": reserve a location, sign the token
    COMMIT = "commit"  # "commit to globalViewVector"
    COMMIT_NULL = "commit_null"  # "commit NULL to the reserved location"


class Sight(enum.Enum):
    """What a node sees on a token it takes into hand, for the view-state step.

    The Raincore paper compares only ``token.nodelist`` with ``localView``; the reservation on the
    token (decision 22 in docs/protocols/raincore.md) refines "the same" into whether the
    ring may reserve and whether every member has reserved.
    """

    CHANGED = "nodelist != localView"
    SAME = "nodelist == localView"
    OTHERS_RESERVING = "nodelist == localView, a reservation open without this node"
    NO_PRIMARY = "nodelist == localView, not a primary component"
    STILL_RESERVING = "nodelist == localView, not every member has reserved yet"
    SUPERSEDED = "nodelist == localView, the token reserves another location"


ON_TOKEN: dict[tuple[ViewState, Sight], tuple[ViewState, ViewStep]] = {
    # (viewState, what the token shows) -> (new viewState, step). Figure 9, with the
    # reservation signed on the token (decision 22).
    (AGR, Sight.SAME): (AGR, ViewStep.NONE),
    (AGR, Sight.CHANGED): (CHA, ViewStep.NONE),
    (AGR, Sight.OTHERS_RESERVING): (CHA, ViewStep.NONE),
    (CHA, Sight.SAME): (RES, ViewStep.RESERVE),
    (CHA, Sight.CHANGED): (CHA, ViewStep.NONE),
    (CHA, Sight.NO_PRIMARY): (CHA, ViewStep.NONE),
    (RES, Sight.SAME): (AGR, ViewStep.COMMIT),
    (RES, Sight.STILL_RESERVING): (RES, ViewStep.NONE),
    (RES, Sight.CHANGED): (CHA, ViewStep.COMMIT_NULL),
    (RES, Sight.SUPERSEDED): (CHA, ViewStep.COMMIT_NULL),
}


def _name(state: State) -> str:
    token, view = state
    return f"{token.value.capitalize()}{view.value.capitalize()}"


INITIAL_STATES: tuple[State, ...] = (EATING_AGREEMENT, HUNGRY_AGREEMENT, STARVING_CHAOS)
"""Where a node boots: the first member (it creates the token), the other members, a
joining or recovered node."""

ROWS: dict[tuple[State, Ev], Transition[State]] = {
    (state, ev): tr for state in STATES for ev, tr in _BY_STATE[state].items()
}

TABLE: TransitionTable[State, Ev] = TransitionTable(
    "raincore",
    ROWS,
    states=STATES,
    events=tuple(Ev),
    initial=[(state, Ev.INITIALIZATION.value) for state in INITIAL_STATES],
    label=_name,
)
"""Figure 11 as the project's one transition-table convention (``ringcast.core.fsm``)."""


def mermaid() -> str:
    """Figure 11 rendered from :data:`TABLE` as a fenced Mermaid ``stateDiagram-v2``.

    One edge per (state, target) pair that some event leads to, labelled with those
    events; a node staying in its state (vetoes, stale timers, dropped tokens) is not
    drawn, as in the Raincore paper's figure; ``[*]`` marks the states a node boots in.
    """
    return TABLE.mermaid(self_loops=False, fenced=True)
