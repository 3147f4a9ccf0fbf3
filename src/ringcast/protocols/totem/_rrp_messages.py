"""Wire messages of Totem's redundant ring (type ids 0x0500-0x05FF).

The redundant ring adds two messages under the single ring and changes none of the
single ring's own (the corosync Totem slides, the redundant ring slides; Koch, Moser and
Melliar-Smith, "The Totem Redundant Ring Protocol"):

- :class:`RrpPacket`, the envelope every single-ring packet travels in: the sender's
  incarnation (``epoch``) and packet counter (``pkt``). Copies of one packet sent on
  several networks share both, so a receiver keeps the first copy and drops the others
  as duplicates, whatever the packet is (a regular token, a commit token, a frame);
- :class:`RingTest`, the probe of a network marked faulty: it goes from node to node
  along the ring on that network only, and once it has come back to its origin, an
  ``activate`` round tells every node to use the network again (corosync 2's
  ``RING_TEST_ACTIVE`` / ``RING_TEST_ACTIVATE`` messages).
"""

from __future__ import annotations

from dataclasses import dataclass

from ringcast.core.codec import wire


@wire(0x0501)
@dataclass(frozen=True, slots=True)
class RrpPacket:
    """One single-ring packet as the redundant ring puts it on a network.

    ``epoch`` tells the sender's incarnations apart (its packet counter restarts at 1
    when it restarts); ``pkt`` numbers its packets, every copy of one packet alike.
    """

    epoch: int
    pkt: int
    msg: object


@wire(0x0502)
@dataclass(frozen=True, slots=True)
class RingTest:
    """The probe of a faulty network (``activate`` false), or the round that re-admits
    it (``activate`` true). ``origin`` sent it, ``nonce`` numbers its probes, ``hops``
    counts the nodes it passed (a probe whose origin is gone dies after a lap)."""

    origin: str
    network: int
    nonce: int
    activate: bool
    hops: int = 0


MESSAGE_TYPES: tuple[type, ...] = (RrpPacket, RingTest)
