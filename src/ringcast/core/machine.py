"""The ``Machine`` protocol every ringcast protocol implements, and what it is built from.

A machine is a pure state machine: ``handle(event, now)`` with ``now`` in integer
nanoseconds, returning effects. The same object runs in the simulator and in the
asyncio runtime; a host never reaches into a machine's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ringcast.core.effects import Effect
from ringcast.core.events import Event
from ringcast.core.ids import NodeId


@runtime_checkable
class Machine(Protocol):
    node_id: NodeId

    def handle(self, event: Event, now: int) -> list[Effect]: ...


@dataclass(frozen=True)
class MachineContext:
    """What a protocol factory knows when it builds a node's machine.

    ``members`` is the initial group (a node in it boots as a member); ``peers`` every
    node of the broadcast domain the host can address; ``joining`` is true for a node
    that was not in the initial set and must ask to join. ``storage`` is what earlier
    incarnations of this node persisted (empty on first boot). ``seed`` seeds any
    randomness the protocol wants (jitter), so runs stay deterministic.
    """

    node_id: NodeId
    members: tuple[NodeId, ...]
    peers: tuple[NodeId, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    storage: Mapping[str, bytes] = field(default_factory=dict)
    networks: int = 1
    joining: bool = False
    seed: int = 0
