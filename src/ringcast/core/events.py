"""Events: everything a protocol machine learns from the world.

A host (the simulator or the asyncio runtime) turns what happens into one of these
frozen dataclasses and calls ``machine.handle(event, now)``. Nothing else reaches a
machine: no sockets, no clocks, no randomness of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ringcast.core.frozen import fast_init
from ringcast.core.ids import NodeId

ORDERS = ("agreed", "safe", "fifo")


@dataclass(frozen=True, slots=True)
class Start:
    """The node starts (first boot, or restart after a crash with stable storage kept)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Received:
    """A protocol message ``msg`` arrived from ``src`` on network ``network``."""

    src: NodeId
    msg: Any
    network: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class TimerFired:
    """The timer ``name`` set by an earlier :class:`~ringcast.core.effects.SetTimer` expired."""

    name: str


@fast_init
@dataclass(frozen=True, slots=True)
class SendFailed:
    """Failure-on-delivery: the reliable transport gave up delivering ``msg`` to ``dst``.

    This is the Raincore Transport Manager's notification (the Raincore paper, section 1.1).
    ``unanswered``: every transmission went unacknowledged (``max_tries``); False when
    a later incarnation of ``dst`` acknowledged and refused it (the receiver restarted).
    """

    dst: NodeId
    msg: Any
    unanswered: bool = True


@fast_init
@dataclass(frozen=True, slots=True)
class Submit:
    """The application multicasts ``payload`` in ``order``; ``msg_id`` is ``sender:counter``.

    The host assigns ``msg_id`` (and records the ``submit`` trace event), so ids stay
    unique across restarts of the machine.
    """

    msg_id: str
    payload: bytes
    order: str = "agreed"


@dataclass(frozen=True, slots=True)
class LockRequest:
    """The application asks for the group's mutual-exclusion lock."""


@dataclass(frozen=True, slots=True)
class LockRelease:
    """The application releases the lock it holds."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Graceful leave: the node is asked to leave the group and stop."""


@fast_init
@dataclass(frozen=True, slots=True)
class Suspected:
    """The failure detector layer suspects ``node`` has crashed or is unreachable."""

    node: NodeId


@fast_init
@dataclass(frozen=True, slots=True)
class Unsuspected:
    """The failure detector heard from ``node`` again after suspecting it."""

    node: NodeId


Event = (
    Start
    | Received
    | TimerFired
    | SendFailed
    | Submit
    | LockRequest
    | LockRelease
    | Stop
    | Suspected
    | Unsuspected
)
