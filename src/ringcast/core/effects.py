"""Effects: everything a protocol machine asks the world to do.

``machine.handle(event, now)`` returns a list of these. The host carries them out:
sends datagrams, arms timers, hands deliveries and views to the application, writes
stable storage, and appends ``Record`` effects to the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ringcast.core.frozen import fast_init
from ringcast.core.ids import NodeId, View

EVERY_NETWORK = -1
"""``network`` value of a packet sent on every network the node has (heartbeats)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Send:
    """Send ``msg`` to ``dst``.

    ``network`` picks one network; ``None`` (the default) means "the layer below
    decides" (a redundant-ring layer picks one or several), and the host sends a packet
    no layer decided for on network 0; :data:`EVERY_NETWORK` sends it on every
    network. ``reliable`` asks the reliable-unicast layer stacked under the protocol
    (Raincore's Transport Manager) to deliver it, or report
    :class:`~ringcast.core.events.SendFailed`.
    """

    dst: NodeId
    msg: Any
    network: int | None = None
    reliable: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class Multicast:
    """Send ``msg`` to every node the host knows of (broadcast domain), except self.

    ``network`` as for :class:`Send`."""

    msg: Any
    network: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class SetTimer:
    """Arm (or re-arm) timer ``name`` to fire after ``delay`` nanoseconds."""

    name: str
    delay: int


@fast_init
@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Disarm timer ``name`` if it is armed."""

    name: str


@fast_init
@dataclass(frozen=True, slots=True)
class Deliver:
    """Deliver an application message to the application, in ``order``."""

    msg_id: str
    payload: bytes
    order: str
    sender: NodeId = ""


@fast_init
@dataclass(frozen=True, slots=True)
class InstallView:
    """Install a new configuration (membership view) at this node."""

    view: View


@fast_init
@dataclass(frozen=True, slots=True)
class LockGranted:
    """The mutual-exclusion lock requested by this node's application is now held.

    ``fence`` is a fencing token (as Chubby's sequencers, ZooKeeper's zxids): a number
    that grows with every grant, which the application passes to the resources it
    guards so that they refuse a holder whose fence is below one they have seen
    (0: the protocol gives none).
    """

    fence: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class LockReleased:
    """The lock this node held is released (by the application or forcibly)."""

    reason: str = "released"


@fast_init
@dataclass(frozen=True, slots=True)
class Backpressure:
    """Flow control toward the application: while ``blocked``, the host holds new submits.

    A protocol whose send queue is full emits ``Backpressure(True)``, and
    ``Backpressure(False)`` once it has room again; the simulator's workload and the
    runtime's ``multicast()`` wait in between, so memory stays bounded under any load.
    """

    blocked: bool


@fast_init
@dataclass(frozen=True, slots=True)
class Persist:
    """Write ``value`` under ``key`` to stable storage; it survives a crash."""

    key: str
    value: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class Record:
    """Append a trace event of ``kind`` with protocol-specific ``fields``.

    Fields named like trace columns (``msg``, ``order``, ``view``, ``members``,
    ``transitional``, ``size``) fill those columns; the rest go to ``detail`` as JSON.
    """

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: str, **fields: Any) -> Record:
        return cls(kind, fields)


@fast_init
@dataclass(frozen=True, slots=True)
class LeaderChanged:
    """This node now names ``leader`` as the group's leader (coordinator) in ``view``.

    The protocol says so itself, whichever way it elects: Raincore and Totem name the
    first member of each regular configuration (:attr:`View.leader`), Tribes the
    coordinator of its confirmed view, GMS the coordinator of its installed view. The
    host sets ``Group.leader``, tells the application and writes the ``leader`` trace
    row (``view`` column, ``{"leader": ...}`` detail).
    """

    leader: NodeId | None
    view: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class StateChanged:
    """The protocol's own state, as the application and ``ringcast status`` see it.

    ``fields`` are scalars (a state name, a ring id, a counter); the host keeps the
    latest for the status page and writes them as the detail of a ``state`` trace row.
    """

    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, **fields: Any) -> StateChanged:
        return cls(fields)


def install_view(view: View) -> list[InstallView]:
    """Install ``view``. A protocol that names a leader with it says so separately
    (:class:`LeaderChanged`); see :func:`leader_of_view` for the view's first member."""
    return [InstallView(view)]


def leader_of_view(view: View) -> list[LeaderChanged]:
    """The leader every node of a regular configuration names, for the protocols whose
    source elects none (the Raincore and Totem papers): its first member
    (:attr:`View.leader`). Nothing for a transitional or an empty configuration."""
    if view.transitional or view.leader is None:
        return []
    return [LeaderChanged(view.leader, view.view_id)]


Effect = (
    Send
    | Multicast
    | SetTimer
    | CancelTimer
    | Deliver
    | InstallView
    | LockGranted
    | LockReleased
    | Backpressure
    | Persist
    | Record
    | LeaderChanged
    | StateChanged
)
