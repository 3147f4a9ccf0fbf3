"""The roles of a GMS node and their transition tables (JGroups' ``GmsImpl`` classes).

JGroups gives a node one of three implementations of its group-membership behaviour:
``ClientGmsImpl`` while it joins, ``ParticipantGmsImpl`` as a member, and
``CoordGmsImpl`` as the coordinator (the first member of the view). ringcast writes
each down as an explicit :class:`~ringcast.core.fsm.TransitionTable`, plus a fourth for
a node on its way out. A row maps ``(state, event)`` to the action the machine runs
and the states that action may end in; an event a state does not list is dropped and
counted. The diagrams in ``docs/protocols/gms.md`` are rendered from these tables.

Events are named after the messages of JGRP-136 and JGroups (``VIEW``,
``PREPARE_VIEW``, ...), ``suspected`` (the local failure detector), ``submit`` and
``stop`` (the application) and the timers (``*_timer``).
"""

from __future__ import annotations

from enum import StrEnum

from ringcast.core.fsm import IGNORE, Transition, TransitionTable


class St(StrEnum):
    DISCOVERING = "discovering"  # client: FIND_MBRS sent, collecting answers
    JOINING = "joining"  # client: JOIN sent to the coordinator, waiting for JoinRsp
    PARTICIPANT = "participant"  # member, not the coordinator
    COORDINATOR = "coordinator"  # member, first of its view, no installation under way
    INSTALLING = "installing"  # coordinator collecting VIEW_ACKs (acks, two_phase)
    LEAVING = "leaving"  # Stop received: leave protocol under way
    LEFT = "left"  # gone: ignores everything


MEMBER_STATES = (St.PARTICIPANT, St.COORDINATOR, St.INSTALLING)


class Ev(StrEnum):
    """The events of the tables: the messages of JGRP-136 and JGroups, the failure
    detector's, the application's and the timers'."""

    START = "start"
    STOP = "stop"
    SUSPECTED = "suspected"
    UNSUSPECTED = "unsuspected"
    FIND_MBRS = "FIND_MBRS"
    FIND_MBRS_RSP = "FIND_MBRS_RSP"
    JOIN = "JOIN"
    JOIN_RSP = "JOIN_RSP"
    LEAVE = "LEAVE"
    SUSPECT = "SUSPECT"
    VIEW = "VIEW"
    VIEW_ACK = "VIEW_ACK"
    PREPARE_VIEW = "PREPARE_VIEW"
    COMMIT_VIEW = "COMMIT_VIEW"
    STATUS_VIEW = "STATUS_VIEW"
    INFO = "INFO"
    MERGE_REQ = "MERGE_REQ"
    MERGE_RSP = "MERGE_RSP"
    MERGE_CANCEL = "MERGE_CANCEL"
    MSG = "MSG"
    XMIT_REQ = "XMIT_REQ"
    XMIT_GONE = "XMIT_GONE"
    STABLE = "STABLE"
    CREDIT = "CREDIT"
    SUBMIT = "submit"
    DISCOVERY_TIMER = "discovery_timer"
    JOIN_TIMER = "join_timer"
    FD_TIMER = "fd_timer"
    ACK_TIMER = "ack_timer"
    STATUS_TIMER = "status_timer"
    INFO_TIMER = "info_timer"
    MERGE_TIMER = "merge_timer"
    MERGE_REQ_TIMER = "merge_req_timer"
    LEAVE_TIMER = "leave_timer"
    STABLE_TIMER = "stable_timer"
    COMMIT_TIMER = "commit_timer"


EVENTS = tuple(Ev)

# An accepted view (VIEW, COMMIT_VIEW, JoinRsp, a digest's view) can make any member
# the coordinator or a participant, or take a leaver out.
_VIEW_TARGETS = (St.PARTICIPANT, St.COORDINATOR, St.INSTALLING)


def _t(action: str, *targets: St) -> Transition[St]:
    return Transition(action, targets)


def _member_rows(state: St) -> dict[tuple[St, Ev], Transition[St]]:
    """What every member state does alike: the data path, views arriving, discovery
    answers, the failure detector, merge information."""
    stay = (state,)
    view = _VIEW_TARGETS
    return {
        (state, Ev.FIND_MBRS): _t("answer_find_mbrs", *stay, St.COORDINATOR, St.INSTALLING),
        (state, Ev.FIND_MBRS_RSP): _t(IGNORE, *stay),
        (state, Ev.JOIN_RSP): _t(IGNORE, *stay),
        (state, Ev.SUSPECTED): _t("fd_suspected", *stay, St.COORDINATOR, St.INSTALLING),
        (state, Ev.UNSUSPECTED): _t("fd_unsuspected", *stay),
        (state, Ev.FD_TIMER): _t("fd_tick", *stay, St.COORDINATOR, St.INSTALLING),
        (state, Ev.SUSPECT): _t("on_suspect", *stay, St.COORDINATOR, St.INSTALLING),
        (state, Ev.VIEW): _t("on_view", *view),
        (state, Ev.PREPARE_VIEW): _t("on_prepare_view", *stay, St.PARTICIPANT),
        (state, Ev.COMMIT_VIEW): _t("on_commit_view", *view),
        (state, Ev.STATUS_VIEW): _t("on_status_view", *stay),
        (state, Ev.STATUS_TIMER): _t("status_tick", *stay),
        (state, Ev.INFO): _t("on_info", *view),
        (state, Ev.INFO_TIMER): _t("info_tick", *stay),
        (state, Ev.MERGE_REQ): _t("on_merge_req", *stay),
        (state, Ev.MSG): _t("on_msg", *stay),
        (state, Ev.XMIT_REQ): _t("on_xmit_req", *stay),
        (state, Ev.XMIT_GONE): _t("on_xmit_gone", *stay),
        (state, Ev.STABLE): _t("on_stable", *view),
        (state, Ev.CREDIT): _t("on_credit", *stay),
        (state, Ev.STABLE_TIMER): _t("stable_tick", *stay),
        (state, Ev.SUBMIT): _t("submit", *stay),
        (state, Ev.VIEW_ACK): _t("on_view_ack", *stay),
        (state, Ev.MERGE_RSP): _t(IGNORE, *stay),
        (state, Ev.MERGE_CANCEL): _t("on_merge_cancel", *stay),
        (state, Ev.ACK_TIMER): _t("ack_tick", *stay),
        (state, Ev.MERGE_TIMER): _t("merge_check", *stay, St.INSTALLING, St.COORDINATOR),
        (state, Ev.MERGE_REQ_TIMER): _t("merge_req_tick", *stay),
        (state, Ev.JOIN_TIMER): _t(IGNORE, *stay),
        (state, Ev.DISCOVERY_TIMER): _t(IGNORE, *stay),
        (state, Ev.LEAVE_TIMER): _t(IGNORE, *stay),
        (state, Ev.COMMIT_TIMER): _t(IGNORE, *stay),
    }


CLIENT = TransitionTable(
    "gms.client",
    {
        (St.DISCOVERING, Ev.START): _t("discover", St.DISCOVERING),
        (St.DISCOVERING, Ev.FIND_MBRS_RSP): _t("on_find_mbrs_rsp", St.DISCOVERING),
        (St.DISCOVERING, Ev.DISCOVERY_TIMER): _t(
            "send_join", St.JOINING, St.COORDINATOR, St.DISCOVERING
        ),
        (St.DISCOVERING, Ev.STOP): _t("left", St.LEFT),
        (St.JOINING, Ev.JOIN_RSP): _t("on_join_rsp", St.PARTICIPANT, St.DISCOVERING),
        (St.JOINING, Ev.VIEW): _t("joiner_view", St.JOINING, St.PARTICIPANT),
        (St.JOINING, Ev.PREPARE_VIEW): _t("on_prepare_view", St.JOINING),
        (St.JOINING, Ev.COMMIT_VIEW): _t("joiner_view", St.JOINING, St.PARTICIPANT),
        (St.JOINING, Ev.JOIN_TIMER): _t("join_retry", St.DISCOVERING, St.JOINING),
        (St.JOINING, Ev.STATUS_TIMER): _t("status_tick", St.JOINING),
        (St.JOINING, Ev.MSG): _t("on_msg", St.JOINING),
        (St.JOINING, Ev.STOP): _t("left", St.LEFT),
        (St.DISCOVERING, Ev.MSG): _t("on_msg", St.DISCOVERING),
        (St.DISCOVERING, Ev.MERGE_REQ): _t("refuse_merge_req", St.DISCOVERING),
        (St.JOINING, Ev.MERGE_REQ): _t("refuse_merge_req", St.JOINING),
        **{
            (s, e): _t(IGNORE, s)
            for s in (St.DISCOVERING, St.JOINING)
            for e in (
                Ev.SUSPECTED,
                Ev.UNSUSPECTED,
                Ev.FD_TIMER,
                Ev.FIND_MBRS,
                Ev.INFO,
                Ev.MERGE_CANCEL,
                Ev.STABLE_TIMER,
                Ev.INFO_TIMER,
                Ev.MERGE_REQ_TIMER,
            )
        },
    },
    states=(St.DISCOVERING, St.JOINING, St.PARTICIPANT, St.COORDINATOR, St.LEFT),
    events=EVENTS,
    initial=[(St.DISCOVERING, "joining")],
)
"""ClientGmsImpl: discovery (FIND_MBRS), JOIN to the coordinator most answers name,
JoinRsp; no answer makes the joiner the coordinator of a singleton view (a merge
joins it to the others later); a refused or unanswered JOIN starts discovery again."""


PARTICIPANT = TransitionTable(
    "gms.participant",
    {
        **_member_rows(St.PARTICIPANT),
        (St.PARTICIPANT, Ev.STOP): _t("leave", St.LEAVING, St.LEFT),
        (St.PARTICIPANT, Ev.JOIN): _t("refuse_join", St.PARTICIPANT),
        (St.PARTICIPANT, Ev.LEAVE): _t(IGNORE, St.PARTICIPANT),
        (St.PARTICIPANT, Ev.MERGE_RSP): _t(
            "on_merge_rsp", St.PARTICIPANT, St.COORDINATOR, St.INSTALLING
        ),
    },
    states=(St.PARTICIPANT, St.COORDINATOR, St.INSTALLING, St.LEAVING, St.LEFT),
    events=EVENTS,
    initial=[(St.PARTICIPANT, "initial member")],
)
"""ParticipantGmsImpl: forwards LEAVE to the coordinator, refuses a JOIN (it is not
the coordinator), acknowledges views, and takes over when the SUSPECTs it has seen
make it the first unsuspected member of its view (it "would be coordinator")."""


_COORD = {
    **_member_rows(St.COORDINATOR),
    (St.COORDINATOR, Ev.STOP): _t("leave", St.LEAVING, St.LEFT),
    (St.COORDINATOR, Ev.JOIN): _t("on_join", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, Ev.LEAVE): _t("on_leave", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, Ev.MERGE_TIMER): _t("merge_check", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, Ev.MERGE_RSP): _t("on_merge_rsp", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, Ev.MERGE_CANCEL): _t("on_merge_cancel", St.COORDINATOR, St.INSTALLING),
    **_member_rows(St.INSTALLING),
    (St.INSTALLING, Ev.STOP): _t("leave", St.LEAVING, St.LEFT),
    (St.INSTALLING, Ev.JOIN): _t("queue_join", St.INSTALLING),
    (St.INSTALLING, Ev.LEAVE): _t("queue_leave", St.INSTALLING),
    (St.INSTALLING, Ev.VIEW_ACK): _t("on_view_ack", St.INSTALLING, St.COORDINATOR, St.PARTICIPANT),
    (St.INSTALLING, Ev.ACK_TIMER): _t("ack_tick", St.INSTALLING, St.COORDINATOR, St.PARTICIPANT),
    (St.INSTALLING, Ev.COMMIT_TIMER): _t("commit_delayed", St.COORDINATOR, St.PARTICIPANT),
}
for _s in (St.COORDINATOR, St.INSTALLING):
    for _e in (Ev.SUSPECT, Ev.SUSPECTED, Ev.FD_TIMER, Ev.FIND_MBRS):
        _COORD[(_s, _e)] = Transition(
            _COORD[(_s, _e)].action, (St.COORDINATOR, St.INSTALLING, St.PARTICIPANT)
        )
    # a greater view prepared ends this node's own installation: it is the coordinator
    # of its view again until that view is committed
    _COORD[(_s, Ev.PREPARE_VIEW)] = _t("on_prepare_view", _s, St.COORDINATOR, St.PARTICIPANT)
    _COORD[(_s, Ev.MERGE_REQ)] = _t("on_merge_req", _s)

COORDINATOR = TransitionTable(
    "gms.coordinator",
    _COORD,
    states=(St.COORDINATOR, St.INSTALLING, St.PARTICIPANT, St.LEAVING, St.LEFT),
    events=EVENTS,
    initial=[(St.COORDINATOR, "first of the initial view")],
)
"""CoordGmsImpl: handles JOIN, LEAVE and SUSPECT, computes the next view and casts it
(castViewChange) in the configured mode; in ``acks`` and ``two_phase`` it is
``installing`` until every member of the new view acknowledged (missing_acks empty)
or view_ack_collection_timeout passed; requests arriving meanwhile are queued. It also
leads merges (MERGE3): ``merge_timer`` checks the INFO it heard."""


LEAVER = TransitionTable(
    "gms.leaver",
    {
        (St.LEAVING, Ev.VIEW_ACK): _t("on_view_ack", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.ACK_TIMER): _t("ack_tick", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.COMMIT_TIMER): _t("commit_delayed", St.LEFT),
        (St.LEAVING, Ev.LEAVE_TIMER): _t("leave_tick", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.VIEW): _t("leaver_view", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.COMMIT_VIEW): _t("leaver_view", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.PREPARE_VIEW): _t("leaver_prepare", St.LEAVING),
        (St.LEAVING, Ev.SUSPECT): _t("leaver_suspect", St.LEAVING, St.LEFT),
        (St.LEAVING, Ev.STATUS_VIEW): _t("on_status_view", St.LEAVING),
        **{
            (St.LEAVING, e): _t(IGNORE, St.LEAVING)
            for e in EVENTS
            if e
            not in (
                Ev.VIEW_ACK,
                Ev.ACK_TIMER,
                Ev.LEAVE_TIMER,
                Ev.VIEW,
                Ev.COMMIT_VIEW,
                Ev.PREPARE_VIEW,
                Ev.SUSPECT,
                Ev.STATUS_VIEW,
                Ev.COMMIT_TIMER,
            )
        },
        **{(St.LEFT, e): _t(IGNORE, St.LEFT) for e in EVENTS},
    },
    states=(St.LEAVING, St.LEFT),
    events=EVENTS,
    initial=[(St.LEAVING, Ev.STOP)],
)
"""A leaving node: the coordinator casts the view without itself and, in ``acks`` and
``two_phase``, stays until it is installed (plain leaves at once, JGroups before
JGRP-136); a participant resends LEAVE until a view without it arrives."""


TABLES = {
    St.DISCOVERING: CLIENT,
    St.JOINING: CLIENT,
    St.PARTICIPANT: PARTICIPANT,
    St.COORDINATOR: COORDINATOR,
    St.INSTALLING: COORDINATOR,
    St.LEAVING: LEAVER,
    St.LEFT: LEAVER,
}


def render_mermaid() -> dict[str, str]:
    """Each role's diagram (without self loops), for ``docs/protocols/gms.md``."""
    return {t.name: t.mermaid(self_loops=False) for t in (CLIENT, PARTICIPANT, COORDINATOR, LEAVER)}
