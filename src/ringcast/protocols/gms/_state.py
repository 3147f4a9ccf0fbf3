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

EVENTS = (
    "start",
    "stop",
    "suspected",
    "unsuspected",
    "FIND_MBRS",
    "FIND_MBRS_RSP",
    "JOIN",
    "JOIN_RSP",
    "LEAVE",
    "SUSPECT",
    "VIEW",
    "VIEW_ACK",
    "PREPARE_VIEW",
    "COMMIT_VIEW",
    "STATUS_VIEW",
    "INFO",
    "MERGE_REQ",
    "MERGE_RSP",
    "MERGE_CANCEL",
    "MSG",
    "XMIT_REQ",
    "XMIT_GONE",
    "STABLE",
    "CREDIT",
    "submit",
    "discovery_timer",
    "join_timer",
    "fd_timer",
    "ack_timer",
    "status_timer",
    "info_timer",
    "merge_timer",
    "merge_req_timer",
    "leave_timer",
    "stable_timer",
    "commit_timer",
)

# An accepted view (VIEW, COMMIT_VIEW, JoinRsp, a digest's view) can make any member
# the coordinator or a participant, or take a leaver out.
_VIEW_TARGETS = (St.PARTICIPANT, St.COORDINATOR, St.INSTALLING)


def _t(action: str, *targets: St) -> Transition[St]:
    return Transition(action, targets)


def _member_rows(state: St) -> dict[tuple[St, str], Transition[St]]:
    """What every member state does alike: the data path, views arriving, discovery
    answers, the failure detector, merge information."""
    stay = (state,)
    view = _VIEW_TARGETS
    return {
        (state, "FIND_MBRS"): _t("answer_find_mbrs", *stay, St.COORDINATOR, St.INSTALLING),
        (state, "FIND_MBRS_RSP"): _t(IGNORE, *stay),
        (state, "JOIN_RSP"): _t(IGNORE, *stay),
        (state, "suspected"): _t("fd_suspected", *stay, St.COORDINATOR, St.INSTALLING),
        (state, "unsuspected"): _t("fd_unsuspected", *stay),
        (state, "fd_timer"): _t("fd_tick", *stay, St.COORDINATOR, St.INSTALLING),
        (state, "SUSPECT"): _t("on_suspect", *stay, St.COORDINATOR, St.INSTALLING),
        (state, "VIEW"): _t("on_view", *view),
        (state, "PREPARE_VIEW"): _t("on_prepare_view", *stay, St.PARTICIPANT),
        (state, "COMMIT_VIEW"): _t("on_commit_view", *view),
        (state, "STATUS_VIEW"): _t("on_status_view", *stay),
        (state, "status_timer"): _t("status_tick", *stay),
        (state, "INFO"): _t("on_info", *stay),
        (state, "info_timer"): _t("info_tick", *stay),
        (state, "MERGE_REQ"): _t("on_merge_req", *stay),
        (state, "MSG"): _t("on_msg", *stay),
        (state, "XMIT_REQ"): _t("on_xmit_req", *stay),
        (state, "XMIT_GONE"): _t("on_xmit_gone", *stay),
        (state, "STABLE"): _t("on_stable", *view),
        (state, "CREDIT"): _t("on_credit", *stay),
        (state, "stable_timer"): _t("stable_tick", *stay),
        (state, "submit"): _t("submit", *stay),
        (state, "VIEW_ACK"): _t("on_view_ack", *stay),
        (state, "MERGE_RSP"): _t(IGNORE, *stay),
        (state, "MERGE_CANCEL"): _t("on_merge_cancel", *stay),
        (state, "ack_timer"): _t("ack_tick", *stay),
        (state, "merge_timer"): _t("merge_check", *stay, St.INSTALLING, St.COORDINATOR),
        (state, "merge_req_timer"): _t("merge_req_tick", *stay),
        (state, "join_timer"): _t(IGNORE, *stay),
        (state, "discovery_timer"): _t(IGNORE, *stay),
        (state, "leave_timer"): _t(IGNORE, *stay),
        (state, "commit_timer"): _t(IGNORE, *stay),
    }


CLIENT = TransitionTable(
    "gms.client",
    {
        (St.DISCOVERING, "start"): _t("discover", St.DISCOVERING),
        (St.DISCOVERING, "FIND_MBRS_RSP"): _t("on_find_mbrs_rsp", St.DISCOVERING),
        (St.DISCOVERING, "discovery_timer"): _t(
            "send_join", St.JOINING, St.COORDINATOR, St.DISCOVERING
        ),
        (St.DISCOVERING, "stop"): _t("left", St.LEFT),
        (St.JOINING, "JOIN_RSP"): _t("on_join_rsp", St.PARTICIPANT, St.DISCOVERING),
        (St.JOINING, "VIEW"): _t("joiner_view", St.JOINING, St.PARTICIPANT),
        (St.JOINING, "PREPARE_VIEW"): _t("on_prepare_view", St.JOINING),
        (St.JOINING, "COMMIT_VIEW"): _t("joiner_view", St.JOINING, St.PARTICIPANT),
        (St.JOINING, "join_timer"): _t("join_retry", St.DISCOVERING, St.JOINING),
        (St.JOINING, "status_timer"): _t("status_tick", St.JOINING),
        (St.JOINING, "MSG"): _t("on_msg", St.JOINING),
        (St.JOINING, "stop"): _t("left", St.LEFT),
        (St.DISCOVERING, "MSG"): _t("on_msg", St.DISCOVERING),
        (St.DISCOVERING, "MERGE_REQ"): _t("refuse_merge_req", St.DISCOVERING),
        (St.JOINING, "MERGE_REQ"): _t("refuse_merge_req", St.JOINING),
        **{
            (s, e): _t(IGNORE, s)
            for s in (St.DISCOVERING, St.JOINING)
            for e in (
                "suspected",
                "unsuspected",
                "fd_timer",
                "FIND_MBRS",
                "INFO",
                "MERGE_CANCEL",
                "stable_timer",
                "info_timer",
                "merge_req_timer",
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
        (St.PARTICIPANT, "stop"): _t("leave", St.LEAVING, St.LEFT),
        (St.PARTICIPANT, "JOIN"): _t("refuse_join", St.PARTICIPANT),
        (St.PARTICIPANT, "LEAVE"): _t(IGNORE, St.PARTICIPANT),
        (St.PARTICIPANT, "MERGE_RSP"): _t(
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
    (St.COORDINATOR, "stop"): _t("leave", St.LEAVING, St.LEFT),
    (St.COORDINATOR, "JOIN"): _t("on_join", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, "LEAVE"): _t("on_leave", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, "merge_timer"): _t("merge_check", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, "MERGE_RSP"): _t("on_merge_rsp", St.COORDINATOR, St.INSTALLING),
    (St.COORDINATOR, "MERGE_CANCEL"): _t("on_merge_cancel", St.COORDINATOR, St.INSTALLING),
    **_member_rows(St.INSTALLING),
    (St.INSTALLING, "stop"): _t("leave", St.LEAVING, St.LEFT),
    (St.INSTALLING, "JOIN"): _t("queue_join", St.INSTALLING),
    (St.INSTALLING, "LEAVE"): _t("queue_leave", St.INSTALLING),
    (St.INSTALLING, "VIEW_ACK"): _t("on_view_ack", St.INSTALLING, St.COORDINATOR, St.PARTICIPANT),
    (St.INSTALLING, "ack_timer"): _t("ack_tick", St.INSTALLING, St.COORDINATOR, St.PARTICIPANT),
    (St.INSTALLING, "commit_timer"): _t("commit_delayed", St.COORDINATOR, St.PARTICIPANT),
}
for _s in (St.COORDINATOR, St.INSTALLING):
    for _e in ("SUSPECT", "suspected", "fd_timer", "FIND_MBRS"):
        _COORD[(_s, _e)] = Transition(
            _COORD[(_s, _e)].action, (St.COORDINATOR, St.INSTALLING, St.PARTICIPANT)
        )
    # a greater view prepared ends this node's own installation: it is the coordinator
    # of its view again until that view is committed
    _COORD[(_s, "PREPARE_VIEW")] = _t("on_prepare_view", _s, St.COORDINATOR, St.PARTICIPANT)
    _COORD[(_s, "MERGE_REQ")] = _t("on_merge_req", _s)

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
        (St.LEAVING, "VIEW_ACK"): _t("on_view_ack", St.LEAVING, St.LEFT),
        (St.LEAVING, "ack_timer"): _t("ack_tick", St.LEAVING, St.LEFT),
        (St.LEAVING, "commit_timer"): _t("commit_delayed", St.LEFT),
        (St.LEAVING, "leave_timer"): _t("leave_tick", St.LEAVING, St.LEFT),
        (St.LEAVING, "VIEW"): _t("leaver_view", St.LEAVING, St.LEFT),
        (St.LEAVING, "COMMIT_VIEW"): _t("leaver_view", St.LEAVING, St.LEFT),
        (St.LEAVING, "PREPARE_VIEW"): _t("leaver_prepare", St.LEAVING),
        (St.LEAVING, "SUSPECT"): _t("leaver_suspect", St.LEAVING, St.LEFT),
        (St.LEAVING, "STATUS_VIEW"): _t("on_status_view", St.LEAVING),
        **{
            (St.LEAVING, e): _t(IGNORE, St.LEAVING)
            for e in EVENTS
            if e
            not in (
                "VIEW_ACK",
                "ack_timer",
                "leave_timer",
                "VIEW",
                "COMMIT_VIEW",
                "PREPARE_VIEW",
                "SUSPECT",
                "STATUS_VIEW",
                "commit_timer",
            )
        },
        **{(St.LEFT, e): _t(IGNORE, St.LEFT) for e in EVENTS},
    },
    states=(St.LEAVING, St.LEFT),
    events=EVENTS,
    initial=[(St.LEAVING, "stop")],
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
