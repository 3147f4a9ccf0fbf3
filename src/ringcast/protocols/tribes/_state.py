"""The election as an explicit transition table (Tomcat's ``NonBlockingCoordinator``).

Tomcat's author wished for a state machine ("One day I will document this
algorithm though. Maybe I'll do a state diagram"); this is it. States:

* ``starting``: ``start()`` has not completed; members are collected from beacons, and a
  member added or gone starts no election (Tribes' ``started`` flag);
* ``idle``: no election of this node's is pending;
* ``waiting``: the node expects a token or a ``COORD_CONF`` (it is not the leader of its
  membership, or it forwarded a token); ``waitForCoordMsgTimeout`` is armed, and on
  expiry it starts an election itself (Tomcat gave up);
* ``electing``: the node is the source of a token in circulation (``suggestedviewId``);
  the same timeout restarts a token that never came back;
* ``stopped``: after ``stop()``.

Events and actions carry Tomcat's method names. :data:`TABLE` is a
:class:`ringcast.core.fsm.TransitionTable`; :mod:`.machine` dispatches on it and checks
every step; ``docs/protocols/tribes.md`` embeds its rendering.
"""

from __future__ import annotations

import enum

from ringcast.core.fsm import IGNORE, Transition, TransitionTable


class State(enum.StrEnum):
    STARTING = "starting"
    IDLE = "idle"
    WAITING = "waiting"
    ELECTING = "electing"
    STOPPED = "stopped"


class Ev(enum.StrEnum):
    START = "start"
    STARTED = "started"
    MEMBER_ADDED = "memberAdded"
    MEMBER_DISAPPEARED = "memberDisappeared"
    MY_TOKEN = "COORD_REQUEST mine"
    OTHER_TOKEN = "COORD_REQUEST other"
    VIEW_CONF = "COORD_CONF"
    SEND_FAILED = "token send failed"
    TIMEOUT = "waitForCoordMsgTimeout"
    HEARTBEAT = "heartbeat found inconsistency"
    STOP = "stop"


class Action(enum.StrEnum):
    """One method of :class:`~.machine.TribesMachine` each (``_`` + the value)."""

    START = "start"
    START_ELECTION = "startElection"
    MEMBER_ADDED = "memberAdded"
    MEMBER_DISAPPEARED = "memberDisappeared"
    HANDLE_MY_TOKEN = "handleMyToken"
    HANDLE_OTHER_TOKEN = "handleOtherToken"
    HANDLE_VIEW_CONF = "handleViewConf"
    NEXT_INLINE = "sendElectionMsgToNextInline"
    TIMEOUT = "coordMsgTimeout"
    STOP = "stop"


ST, ID, WA, EL, SP = State.STARTING, State.IDLE, State.WAITING, State.ELECTING, State.STOPPED
RUNNING = (ID, WA, EL)


def _t(action: Action, *targets: State) -> Transition[State]:
    return Transition(action.value, targets)


ROWS: dict[tuple[State, Ev], Transition[State]] = {
    # starting: Tribes' start(): beacons are collected; the start-up wait ends with
    # startElection(false). A token or a view arriving meanwhile completes the start.
    (ST, Ev.START): _t(Action.START, ST),
    (ST, Ev.STARTED): _t(Action.START_ELECTION, *RUNNING),
    (ST, Ev.MEMBER_ADDED): _t(Action.MEMBER_ADDED, ST),
    (ST, Ev.MEMBER_DISAPPEARED): _t(Action.MEMBER_DISAPPEARED, ST),
    (ST, Ev.MY_TOKEN): _t(Action.HANDLE_MY_TOKEN, ST, *RUNNING),
    (ST, Ev.OTHER_TOKEN): _t(Action.HANDLE_OTHER_TOKEN, ST, *RUNNING),
    (ST, Ev.VIEW_CONF): _t(Action.HANDLE_VIEW_CONF, ST, *RUNNING),
    (ST, Ev.SEND_FAILED): _t(Action.NEXT_INLINE, *RUNNING),
    (ST, Ev.TIMEOUT): Transition(IGNORE, (ST,)),
    (ST, Ev.HEARTBEAT): Transition(IGNORE, (ST,)),
    (ST, Ev.STOP): _t(Action.STOP, SP),
    (SP, Ev.STOP): Transition(IGNORE, (SP,)),
}
# Running states. startElection ends idle (alone, or the view already matches the
# membership), waiting (not the leader) or electing (the token is sent); a node whose
# own token is out abandons it ("election already running"). A token of this node's
# own is stale unless it is electing; a foreign one is forwarded (waiting) or taken
# over or held at its leader (electing). COORD_CONF installs the view (idle), unless
# this node's own election goes on or a later change starts a new one.
ROWS.update(
    {
        (ID, Ev.MEMBER_ADDED): _t(Action.MEMBER_ADDED, ID, WA, EL),
        (ID, Ev.MEMBER_DISAPPEARED): _t(Action.MEMBER_DISAPPEARED, ID, WA, EL),
        (ID, Ev.MY_TOKEN): _t(Action.HANDLE_MY_TOKEN, ID),
        (ID, Ev.OTHER_TOKEN): _t(Action.HANDLE_OTHER_TOKEN, ID, WA, EL),
        (ID, Ev.VIEW_CONF): _t(Action.HANDLE_VIEW_CONF, ID, WA, EL),
        (ID, Ev.SEND_FAILED): _t(Action.NEXT_INLINE, ID, WA, EL),
        (WA, Ev.MEMBER_ADDED): _t(Action.MEMBER_ADDED, ID, WA, EL),
        (WA, Ev.MEMBER_DISAPPEARED): _t(Action.MEMBER_DISAPPEARED, ID, WA, EL),
        (WA, Ev.MY_TOKEN): _t(Action.HANDLE_MY_TOKEN, WA),
        (WA, Ev.OTHER_TOKEN): _t(Action.HANDLE_OTHER_TOKEN, WA, EL),
        (WA, Ev.VIEW_CONF): _t(Action.HANDLE_VIEW_CONF, ID, WA, EL),
        (WA, Ev.SEND_FAILED): _t(Action.NEXT_INLINE, WA, ID, EL),
        (EL, Ev.MEMBER_ADDED): _t(Action.MEMBER_ADDED, EL),
        (EL, Ev.MEMBER_DISAPPEARED): _t(Action.MEMBER_DISAPPEARED, EL, ID),
        (EL, Ev.MY_TOKEN): _t(Action.HANDLE_MY_TOKEN, EL, ID, WA),
        (EL, Ev.OTHER_TOKEN): _t(Action.HANDLE_OTHER_TOKEN, EL, WA),
        (EL, Ev.VIEW_CONF): _t(Action.HANDLE_VIEW_CONF, ID, EL, WA),
        (EL, Ev.SEND_FAILED): _t(Action.NEXT_INLINE, EL, ID, WA),
    }
)
for _s in RUNNING:
    ROWS[(_s, Ev.STARTED)] = Transition(IGNORE, (_s,))
    ROWS[(_s, Ev.STOP)] = _t(Action.STOP, SP)
# The timeout: idle has nothing pending (a stale timer); a waiting node starts an
# election itself (Tomcat gave up), a source whose token never came back starts anew.
ROWS[(ID, Ev.TIMEOUT)] = Transition(IGNORE, (ID,))
ROWS[(WA, Ev.TIMEOUT)] = _t(Action.TIMEOUT, ID, EL)
ROWS[(EL, Ev.TIMEOUT)] = _t(Action.TIMEOUT, ID, EL)
# Tribes' heartbeat(): an idle node whose installed view has not matched its membership
# for member_drop_time starts an election; waiting or electing, one is under way.
ROWS[(ID, Ev.HEARTBEAT)] = _t(Action.START_ELECTION, ID, WA, EL)
ROWS[(WA, Ev.HEARTBEAT)] = Transition(IGNORE, (WA,))
ROWS[(EL, Ev.HEARTBEAT)] = Transition(IGNORE, (EL,))

TABLE: TransitionTable[State, Ev] = TransitionTable(
    "tribes",
    ROWS,
    states=(ST, ID, WA, EL, SP),
    events=tuple(Ev),
    initial=[(ST, "start")],
)


def mermaid() -> str:
    """The state diagram of docs/protocols/tribes.md, rendered from :data:`TABLE`."""
    return TABLE.mermaid(self_loops=False, fenced=True)
