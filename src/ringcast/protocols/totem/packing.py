"""Packing small messages into frames, fragmenting large ones, and reassembly.

The pending-submit queue is cut into frames on the token: consecutive messages of the same
order share a frame while the encoded frame (the codec's header, the ``Mcast`` fields and
the chunks) fits ``frame_size`` bytes; a message that alone does not fit is cut into
fragments of one frame each. The size is exact for the frame as its originator encodes
it (a retransmission by a member with a longer node id is that many bytes longer).

A fragmented message is always sent whole within one ring: when a new ring is installed
the sender restarts the message it was cutting from its first fragment, and receivers
drop partial reassemblies at every configuration change.
"""

from __future__ import annotations

from collections import deque

from ringcast.core.codec import encode
from ringcast.protocols.totem._messages import Chunk, Mcast, RingId

CHUNK_OVERHEAD = 24
"""Encoded bytes of a chunk besides its payload and message id: the two lengths (u32)
of the id and the payload, ``frag`` and ``frags`` (i64 each)."""


def utf8_len(s: str) -> int:
    """Encoded length of ``s`` (its length when ASCII, the common case, without encoding)."""
    return len(s) if s.isascii() else len(s.encode())


def frame_overhead(ring_id: RingId, sender: str) -> int:
    """Encoded bytes of an ``Mcast`` of ``sender`` on ``ring_id`` carrying no chunk."""
    return len(encode(Mcast(ring_id, 0, sender, False, ()), sender=sender))


class Packer:
    """The node's pending-submit queue (``msg_id``, ``payload``, ``safe``), cut into frames."""

    __slots__ = ("_head", "frag", "frame_size", "queue")

    def __init__(self, frame_size: int) -> None:
        self.frame_size = frame_size
        self.queue: deque[tuple[str, bytes, bool]] = deque()
        self.frag = 0  # index of the next fragment of the message at the head
        self._head: tuple[RingId, str, int] | None = None  # frame_overhead, cached a ring

    def __len__(self) -> int:
        return len(self.queue)

    def push(self, msg_id: str, payload: bytes, safe: bool) -> None:
        self.queue.append((msg_id, payload, safe))

    def restart_fragment(self) -> None:
        """A new ring: resend the message being fragmented from its first piece."""
        self.frag = 0

    def next_frame(self, ring_id: RingId, seq: int, sender: str) -> Mcast | None:
        q = self.queue
        if not q:
            return None
        head = self._head
        if head is None or head[0] != ring_id or head[1] != sender:
            head = self._head = (ring_id, sender, frame_overhead(ring_id, sender))
        budget = self.frame_size - head[2]
        msg_id, payload, safe = q[0]
        cost = len(payload) + utf8_len(msg_id) + CHUNK_OVERHEAD
        if cost > budget or self.frag:
            piece = max(budget - utf8_len(msg_id) - CHUNK_OVERHEAD, 1)
            frags = max(-(-len(payload) // piece), 1)  # an empty payload is one piece
            i = self.frag
            chunk = Chunk(msg_id, payload[i * piece : (i + 1) * piece], i, frags)
            if i + 1 == frags:
                q.popleft()
                self.frag = 0
            else:
                self.frag = i + 1
            return Mcast(ring_id, seq, sender, safe, (chunk,))
        chunks = [Chunk(msg_id, payload)]
        q.popleft()
        used = cost
        while q:
            msg_id, payload, s = q[0]
            cost = len(payload) + utf8_len(msg_id) + CHUNK_OVERHEAD
            if s is not safe or used + cost > budget:
                break
            chunks.append(Chunk(msg_id, payload))
            used += cost
            q.popleft()
        return Mcast(ring_id, seq, sender, safe, tuple(chunks))


class Reassembler:
    """Per-sender reassembly of fragmented messages, fed in delivery order."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: dict[str, tuple[str, list[bytes]]] = {}

    def feed(self, sender: str, chunk: Chunk) -> bytes | None:
        """The whole payload once ``chunk`` completes its message, else None."""
        if chunk.frag == 0:
            cur = (chunk.msg_id, [chunk.payload])
            self.parts[sender] = cur
        else:
            held = self.parts.get(sender)
            if held is None or held[0] != chunk.msg_id or len(held[1]) != chunk.frag:
                self.parts.pop(sender, None)  # a piece is missing: the message is lost
                return None
            cur = held
            cur[1].append(chunk.payload)
        if len(cur[1]) >= chunk.frags:
            del self.parts[sender]
            return b"".join(cur[1])
        return None

    def clear(self) -> None:
        self.parts.clear()
