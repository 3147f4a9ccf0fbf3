"""What the GMS machine's modules share: settings' names, limits, the events of each
message and timer, and the records of a view installation and a merge under way."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ringcast.core.effects import Effect
from ringcast.core.events import Submit
from ringcast.core.fsm import Driver
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._state import Ev, St
from ringcast.protocols.gms._views import GView
from ringcast.protocols.gms.nakack import Nakack

MODES = ("plain", "acks", "two_phase")
BOOTS_KEY = "gms.boots"
COUNTER_KEY = "gms.counter"
KEEP_INSTALLED = 32  # committed views remembered to answer STATUS_VIEW
MAX_HEARD = 64  # views a MERGE_RSP reports its sender heard of
MAX_WAVES = 3  # rounds of MERGE_REQ in one merge (the views the answers heard of)
MAX_HELD = 256
"""Submits held while the node is not a member before ``Backpressure(True)``
(``docs/protocols/gms.md``, "Decisions where the seed is silent")."""

EVENT_OF_MSG: dict[type, Ev] = {
    M.FindMbrs: Ev.FIND_MBRS,
    M.FindMbrsRsp: Ev.FIND_MBRS_RSP,
    M.Join: Ev.JOIN,
    M.JoinRsp: Ev.JOIN_RSP,
    M.Leave: Ev.LEAVE,
    M.Suspect: Ev.SUSPECT,
    M.ViewMsg: Ev.VIEW,
    M.ViewAck: Ev.VIEW_ACK,
    M.PrepareView: Ev.PREPARE_VIEW,
    M.CommitView: Ev.COMMIT_VIEW,
    M.StatusView: Ev.STATUS_VIEW,
    M.MergeInfo: Ev.INFO,
    M.MergeReq: Ev.MERGE_REQ,
    M.MergeRsp: Ev.MERGE_RSP,
    M.MergeCancel: Ev.MERGE_CANCEL,
    M.Msg: Ev.MSG,
    M.XmitReq: Ev.XMIT_REQ,
    M.XmitGone: Ev.XMIT_GONE,
    M.Stable: Ev.STABLE,
    M.Credit: Ev.CREDIT,
}
TIMERS = {
    "gms:discovery": Ev.DISCOVERY_TIMER,
    "gms:join": Ev.JOIN_TIMER,
    "gms:fd": Ev.FD_TIMER,
    "gms:ack": Ev.ACK_TIMER,
    "gms:status": Ev.STATUS_TIMER,
    "gms:info": Ev.INFO_TIMER,
    "gms:merge": Ev.MERGE_TIMER,
    "gms:merge_req": Ev.MERGE_REQ_TIMER,
    "gms:leave": Ev.LEAVE_TIMER,
    "gms:stable": Ev.STABLE_TIMER,
    "gms:commit": Ev.COMMIT_TIMER,
}
TIMER_OF = {v: k for k, v in TIMERS.items()}


@dataclass(slots=True)
class Installation:
    """A view change the coordinator is casting (castViewChange)."""

    view: GView
    old: tuple[str, ...]  # the members of the view it replaces (they hear of it too)
    joiners: tuple[str, ...]
    missing_acks: set[str]
    deadline: int
    committed: bool = False
    merge: bool = False  # a merge view: installed whole or not at all
    merge_id: str = ""  # the merge it installs, and the nodes that merge asked
    asked: tuple[str, ...] = ()
    ticked: int = 0  # when the acknowledgements were last asked again


@dataclass(slots=True)
class MergeRound:
    merge_id: str
    waiting: set[str]
    views: dict[str, GView] = field(default_factory=dict)
    started: int = 0
    expected: dict[str, str] = field(default_factory=dict)  # asked node -> view its INFO named
    heard: dict[str, tuple[str, str]] = field(default_factory=dict)  # the answers' INFO
    waves: int = 1


class GmsFields:
    """The state of a GMS node, declared once for the machine
    (:class:`~ringcast.protocols.gms.machine.GmsMachine`, which sets every field in its
    ``__init__``) and the modules of its sub-protocols, whose classes it inherits."""

    mode: str
    node_id: str
    rto: int
    ack_timeout: int
    status_timeout: int
    suspect_interval: int
    join_timeout: int
    discovery_timeout: int
    merge_interval: int
    stable_interval: int
    commit_delay: int
    direct_info: bool
    rng: random.Random
    boot: int
    max_counter: int
    stored_counter: int
    joining: bool
    past: int
    initial: tuple[str, ...]
    state: St
    view: GView | None
    installed: dict[str, GView]
    now: int
    local_suspects: set[str]
    suspects: set[str]
    announced: set[str]
    responses: dict[str, tuple[str, tuple[int, str]]]
    join_attempts: int
    prepared: GView | None
    prepared_at: int
    prepared_merge: bool
    install: Installation | None
    q_joins: set[str]
    join_at: dict[str, int]
    q_leaves: set[str]
    plain_retx: dict[str, tuple[Any, set[str]]]
    info: dict[str, tuple[int, str, str]]
    merge: MergeRound | None
    merge_lock: tuple[str, int, str] | None
    answered: dict[str, int]
    merges: int
    timers_armed: bool
    data: Nakack
    blocked: bool
    held: list[Submit]
    dropped: int
    foreign_changed: int
    peers: tuple[str, ...]
    revived: dict[str, int]
    unaccounted: dict[str, int]
    viewless: dict[str, int]
    injected: GView | None
    fsm: Driver[St, Ev]

    if TYPE_CHECKING:
        # The steps one sub-protocol takes of another's (each defined in its module).
        def _am_coord(self) -> bool: ...
        def _arm(self, out: list[Effect]) -> None: ...
        def _cancel_merge(self, reason: str, out: list[Effect]) -> None: ...
        def _cast(
            self,
            members: list[str],
            out: list[Effect],
            *,
            joiners: tuple[str, ...] = (),
            floor: int = 0,
            why: str = "",
            merge: bool = False,
        ) -> None: ...
        def _check_takeover(self, out: list[Effect]) -> None: ...
        def _finish(self, out: list[Effect]) -> None: ...
        def _install(self, v: GView, out: list[Effect]) -> None: ...
        def _jitter(self) -> int: ...
        def _next_counter(self, out: list[Effect], *floor: int) -> int: ...
        def _process_queue(self, out: list[Effect]) -> None: ...
        def _release(self, out: list[Effect]) -> None: ...
        def _resend_view(self, dsts: tuple[str, ...], out: list[Effect]) -> None: ...
        def _unheard_outsiders(self, view: GView) -> list[str]: ...
        def _outsiders_alive(
            self, members: Iterable[str], silent: Iterable[str] = ()
        ) -> set[str]: ...
        def _on_commit_view(self, now: int, src: str, msg: Any) -> list[Effect]: ...
        def _restart(
            self, members: list[str], out: list[Effect], *, why: str, merge: bool = False
        ) -> None: ...
        def _suspect(self, node: str, out: list[Effect]) -> None: ...
