"""A heartbeat failure detector for the coordinator protocols.

Every ``interval`` nanoseconds the node multicasts a heartbeat. A peer not heard from
for ``misses`` intervals is suspected (:class:`~ringcast.core.events.Suspected`); a
later heartbeat from it unsuspects it (:class:`~ringcast.core.events.Unsuspected`).
Any message from a peer counts as a sign of life (``heard``), not only heartbeats.

Every node watches every other one, so a group of n watches n x (n - 1) links, and under
independent loss p each of them falsely suspects its peer at a rate of about p^misses
per interval: the group's false suspicions grow with the square of its size. With
``per_doubling`` (GMS's and basic's ``heartbeat_misses_per_doubling``), ``misses`` is
what a group of up to :data:`SIZED_FOR` uses, and a larger one needs ``per_doubling``
more missed heartbeats each time it doubles (:func:`doublings`): doubling the group
multiplies its links by about 4, and one more miss divides the rate by 1/p, 4 at 25 %
loss, so the group's rate stays about where it is at 8 members, while a crash is
detected one interval later per doubling (docs/protocols/gms.md, "Failure detection
that scales with the group").

With ``verify`` (GMS's and basic's ``suspect_verify_timeout``), a silent peer is not
suspected at once: the detector sends it a direct probe (:class:`AreYouAlive`, on every
network, again each heartbeat period) and suspects it only if nothing at all is heard
from it for ``verify`` more nanoseconds, as JGroups' VERIFY_SUSPECT confirms a
suspicion before it is acted on. A peer answers a probe with a heartbeat sent to the
prober alone. A process the scheduler kept off the CPU (or that was stopped) answers as
soon as it runs again, so a stall shorter than the silence plus ``verify`` costs no view
change, while a crash is suspected ``verify`` later (docs/protocols/gms.md, "Suspicions
confirmed before they count").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ringcast.core.codec import wire
from ringcast.core.effects import EVERY_NETWORK, Effect, Multicast, Send, SetTimer
from ringcast.core.events import Event, Received, Suspected, Unsuspected
from ringcast.core.ids import NodeId
from ringcast.core.scale import doublings
from ringcast.core.units import MS
from ringcast.protocols.registry import Setting

TIMER_PREFIX = "fd:"
TIMER = TIMER_PREFIX + "tick"


@wire(0x0003)
@dataclass(frozen=True, slots=True)
class Heartbeat:
    """ "I am alive": multicast every interval, and sent to a prober alone in answer to
    its :class:`AreYouAlive`."""


@wire(0x0004)
@dataclass(frozen=True, slots=True)
class AreYouAlive:
    """A direct probe of a peer silent for the detection time, before it is suspected."""


class HeartbeatDetector:
    """Suspects peers that stay silent for ``misses`` heartbeat intervals, plus
    ``per_doubling`` for each doubling of the group beyond :data:`SIZED_FOR` (the group:
    ``peers`` and this node, every node configured; ``self.misses`` is the number in
    force).

    A :class:`~ringcast.layers.base.Layer`: every datagram climbing through it is a sign
    of life from its sender (heartbeats stop here); it sends heartbeats on every network.
    """

    timer_prefix: ClassVar[str] = TIMER_PREFIX
    down_types: ClassVar[frozenset[type]] = frozenset()
    up_types: ClassVar[frozenset[type]] = frozenset({Received})

    def __init__(
        self,
        node_id: NodeId,
        peers: tuple[NodeId, ...],
        *,
        interval: int,
        misses: int,
        per_doubling: int = 0,
        verify: int = 0,
    ):
        if interval <= 0:
            raise ValueError("heartbeat interval must be positive")
        if misses < 1:
            raise ValueError("misses must be at least 1")
        if per_doubling < 0:
            raise ValueError("per_doubling must not be negative")
        if verify < 0:
            raise ValueError("verify must not be negative")
        self.node_id = node_id
        self.interval = interval
        self.misses = misses + per_doubling * doublings(len(set(peers) | {node_id}))
        self.last_heard: dict[NodeId, int] = {}
        self.suspected: set[NodeId] = set()
        self.verify = verify
        self.verifying: dict[NodeId, int] = {}
        """Peers probed with :class:`AreYouAlive` and not heard from since: when."""
        self._peers = tuple(p for p in peers if p != node_id)
        self._started_at = 0

    @classmethod
    def from_settings(
        cls, node_id: NodeId, peers: tuple[NodeId, ...], settings: Mapping[str, Any]
    ) -> HeartbeatDetector:
        """The detector a protocol configures with the settings GMS and basic share:
        ``heartbeat_interval``, ``heartbeat_misses``, ``heartbeat_misses_per_doubling`` and
        ``suspect_verify_timeout``."""
        return cls(
            node_id,
            peers,
            interval=int(settings["heartbeat_interval"]),
            misses=int(settings["heartbeat_misses"]),
            per_doubling=int(settings["heartbeat_misses_per_doubling"]),
            verify=int(settings["suspect_verify_timeout"]),
        )

    def start(self, now: int) -> list[Effect]:
        self._started_at = now
        return [Multicast(Heartbeat(), EVERY_NETWORK), SetTimer(TIMER, self.interval)]

    def heard(self, src: NodeId, now: int) -> list[Event]:
        """A sign of life from ``src``; a peer heard for the first time is announced too.
        A datagram that names this node as its sender (a forged or reflected one) is no
        sign of a peer: kept, this node would in time suspect itself."""
        if src == self.node_id:
            return []
        first = src not in self.last_heard and src not in self._peers
        self.last_heard[src] = now
        self.verifying.pop(src, None)
        if src in self.suspected or first:
            self.suspected.discard(src)
            return [Unsuspected(src)]
        return []

    def tick(self, now: int) -> tuple[list[Event], list[Effect]]:
        limit = self.interval * self.misses
        up: list[Event] = []
        out: list[Effect] = [Multicast(Heartbeat(), EVERY_NETWORK)]
        known = set(self._peers) | set(self.last_heard)
        for peer in sorted(known):
            last = self.last_heard.get(peer, self._started_at)
            if peer in self.suspected or now - last < limit:
                continue
            if self.verify:
                probed = self.verifying.get(peer)
                if probed is None:  # silent for the detection time: ask it directly first
                    self.verifying[peer] = now
                    out.append(Send(peer, AreYouAlive(), network=EVERY_NETWORK))
                    continue
                if now - probed < self.verify:  # again each period: a probe may be lost
                    out.append(Send(peer, AreYouAlive(), network=EVERY_NETWORK))
                    continue
                del self.verifying[peer]
            self.suspected.add(peer)
            up.append(Suspected(peer))
        out.append(SetTimer(TIMER, self.interval))
        return up, out

    # -- the Layer interface

    def up(self, event: Event, now: int) -> tuple[list[Event], list[Effect]]:
        # up_types is (Received,): the stack hands this layer nothing else.
        src = event.src  # type: ignore[union-attr]
        last = self.last_heard
        if src in last and src not in self.suspected:  # the common case: nothing to say
            last[src] = now
            if self.verifying:
                self.verifying.pop(src, None)
            up: list[Event] = []
        else:
            up = self.heard(src, now)
        tp = type(event.msg)  # type: ignore[union-attr]
        if tp is Heartbeat:
            return up, []
        if tp is AreYouAlive:
            if src == self.node_id:
                return up, []
            return up, [Send(src, Heartbeat(), network=EVERY_NETWORK)]
        up.append(event)
        return up, []

    def down(self, effect: Effect, now: int) -> tuple[list[Event], list[Effect]]:
        return [], [effect]

    def timer(self, name: str, now: int) -> tuple[list[Event], list[Effect]]:
        return self.tick(now)


SETTINGS: dict[str, Setting] = {
    "heartbeat_interval": Setting("duration", 50 * MS, "heartbeat period", minimum=1),
    "heartbeat_misses": Setting("int", 4, "missed heartbeats before suspicion", minimum=1),
    "heartbeat_misses_per_doubling": Setting(
        "int",
        1,
        "missed heartbeats added each time the configured group doubles beyond 8 "
        "members (0: heartbeat_misses whatever the size)",
        minimum=0,
    ),
    "suspect_verify_timeout": Setting(
        "duration",
        150 * MS,
        "a peer silent for the detection time is probed directly and suspected only if "
        "still silent this much later (0: suspected at once)",
        minimum=0,
    ),
}
"""The detector's settings, declared once for every protocol that stacks it (basic,
GMS): :meth:`HeartbeatDetector.from_settings` reads them."""


def suspicion_time(settings: Mapping[str, Any]) -> int:
    """The failure-detection timeout: ``heartbeat_misses`` silent heartbeat periods, that
    of a group of up to 8, plus the probe's ``suspect_verify_timeout``. A larger group
    waits ``heartbeat_misses_per_doubling`` more periods each time it doubles; the lab's
    unit stays this, as Totem's stays ``token_timeout`` (docs/protocols/gms.md, "Failure
    detection that scales with the group")."""
    return int(settings["heartbeat_interval"]) * int(settings["heartbeat_misses"]) + int(
        settings["suspect_verify_timeout"]
    )
