"""UDP sockets for one node: one endpoint a configured network.

Two modes, as in corosync: ``udpu`` sends a multicast as one unicast datagram to each
peer (fan-out); ``multicast`` sends it once to the network's IP multicast group, which
every node joins. Unicast sends are plain datagrams to the peer's address in both
modes. In ``multicast`` mode each network has a second socket bound to the group.

The sockets are driven directly by the event loop's reader and writer callbacks
rather than through asyncio's datagram transports: a readable socket is drained of
up to ``READ_BATCH`` datagrams per wake-up (asyncio's transport reads one datagram per
loop iteration, which makes the loop itself the bottleneck at tens of thousands of
datagrams a second), and a send goes straight to ``sendto``.

Sending never blocks and never queues without bound: when the kernel's socket
buffer is full, the datagram waits in a user-space queue flushed when the socket is
writable again, and once that queue holds more than ``max_buffer`` bytes further
datagrams are dropped (UDP semantics; the protocol retransmits) and counted.

**Batched system calls (UDP segmentation and receive offload).** Between ``cork()`` and
``uncork()`` (the host corks around the effects of one event) datagrams are held; at
``uncork()`` each destination's datagrams leave in as few ``sendmsg`` calls as Linux's
UDP generic segmentation offload allows (``UDP_SEGMENT``, udp(7), Linux 4.18): one call
carries a run of datagrams of one size (the last of a run may be shorter), and the
kernel cuts it into the same datagrams on the wire, so the network stack is walked once
a run instead of once a datagram. A receiving socket with ``UDP_GRO`` (Linux 5.0) gets
such a run, or datagrams of one flow that the kernel coalesced, in one ``recvmsg`` with
the segment size beside it and hands each datagram to the node on its own. The
destination of the last datagram held goes first (a token visit's: the next token
holder, which gets its frames and then the token in one call, so its turn starts while
the other peers' frames are still being handed to the kernel); the other destinations
follow, latest last datagram first. In ``multicast`` mode the frames go to the group
and only the token to the next holder, so the group is flushed before anything else:
the token never overtakes the frames it follows. Within a destination the order is the
order sent. Where the platform lacks either option, or refuses a segment size (a
datagram larger than the path's MTU), the datagrams go one ``sendto`` each, as when
``udp_offload`` is off (in the order sent); receivers without ``UDP_GRO`` get ordinary
datagrams.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import socket
import struct
import sys
from collections.abc import Callable

from ringcast.runtime.config import Address

SOCKET_BUFFER = 4 << 20
READ_BATCH = 64
"""Datagrams (or coalesced runs of them) read from one socket per wake-up before other
callbacks get a turn."""
MAX_DATAGRAM = 65536

# udp(7): the socket options of UDP segmentation (send) and receive offload (Linux only;
# Python's socket module does not name them before 3.12).
SOL_UDP = 17
UDP_SEGMENT = 103
UDP_GRO = 104
MAX_SEGMENTS = 64
"""The kernel's limit on datagrams in one segmented send (UDP_MAX_SEGMENTS)."""
MAX_RUN_BYTES = 65_000
"""Bytes in one segmented send: the run must fit one IP datagram's 16-bit length."""
_GSO_TOO_BIG = {errno.EINVAL, errno.EMSGSIZE}
"""A segmented send refused for its segment size (above the path's MTU): smaller may do."""
_GSO_UNSUPPORTED = {errno.EIO, errno.EOPNOTSUPP, errno.ENOPROTOOPT}
"""Refused for the path (no checksum offload, IPsec) or the kernel: never on this socket."""
_GRO_ANCILLARY = socket.CMSG_SPACE(4) if hasattr(socket, "CMSG_SPACE") else 0  # not on Windows
_U16 = struct.Struct("=H")
_I32 = struct.Struct("=i")

OnDatagram = Callable[[bytes, int], None]


def _enable_gro(sock: socket.socket) -> bool:
    """Turn on UDP receive offload on ``sock``; False where the platform has none."""
    if sys.platform != "linux":
        return False
    try:
        sock.setsockopt(SOL_UDP, UDP_GRO, 1)
    except OSError:
        return False
    return True


def _has_gso(sock: socket.socket) -> bool:
    """True if the kernel knows UDP segmentation offload (it can read the option back)."""
    if sys.platform != "linux":
        return False
    try:
        sock.getsockopt(SOL_UDP, UDP_SEGMENT)
    except OSError:
        return False
    return True


def runs(packets: list[bytes], limit: int) -> list[list[bytes]]:
    """Split one destination's ``packets`` (in order) into runs one segmented send can carry.

    A run is datagrams of one size, at most ``MAX_SEGMENTS`` of them and ``MAX_RUN_BYTES``
    in all, optionally ended by one shorter datagram (udp(7)); a datagram larger than
    ``limit`` (the largest segment size the path takes) is a run of its own.
    """
    out: list[list[bytes]] = []
    run: list[bytes] = []
    size = total = 0
    for p in packets:
        n = len(p)
        if run and n <= size and len(run) < MAX_SEGMENTS and total + n <= MAX_RUN_BYTES:
            run.append(p)
            total += n
            if n == size:
                continue
            out.append(run)  # a shorter datagram ends the run
            run = []
            continue
        if run:
            out.append(run)
        if n > limit:
            out.append([p])
            run = []
            continue
        run, size, total = [p], n, n
    if run:
        out.append(run)
    return out


class _Endpoint:
    """One bound socket: reads in batches, sends directly, queues only when the kernel is full."""

    __slots__ = (
        "_gro",
        "_gso_limit",
        "_loop",
        "_owner",
        "_queue",
        "_writing",
        "held",
        "network",
        "on_datagram",
        "queued_bytes",
        "sock",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        network: int,
        on_datagram: OnDatagram,
        owner: UdpTransport,
    ):
        self._loop = loop
        self.sock = sock
        self.network = network
        self.on_datagram = on_datagram
        self._owner = owner
        self._queue: collections.deque[tuple[bytes, Address]] = collections.deque()
        self.queued_bytes = 0
        self._writing = False
        self.held: list[tuple[bytes, Address]] = []  # while the transport is corked
        offload = owner.udp_offload
        self._gro = offload and _enable_gro(sock)
        # the largest datagram a segmented send may carry (0: segmentation off); lowered
        # when the kernel refuses a segment size (a datagram above the path's MTU)
        self._gso_limit = MAX_RUN_BYTES if offload and _has_gso(sock) else 0
        loop.add_reader(sock.fileno(), self._read_ready if not self._gro else self._read_gro)

    def _read_ready(self) -> None:
        recv = self.sock.recv
        deliver = self.on_datagram
        net = self.network
        for _ in range(READ_BATCH):
            try:
                data = recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                # ICMP port unreachable from a peer that is down, and the like:
                # UDP carries on.
                continue
            deliver(data, net)

    def _read_gro(self) -> None:
        """``_read_ready`` with receive offload: one read may hold a run of datagrams of
        one size (the kernel gives the size beside it); each goes to the node on its own."""
        recvmsg = self.sock.recvmsg
        deliver = self.on_datagram
        net = self.network
        for _ in range(READ_BATCH):
            try:
                data, ancillary, _flags, _addr = recvmsg(MAX_DATAGRAM, _GRO_ANCILLARY)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue
            size = 0
            for level, kind, value in ancillary:
                if level == SOL_UDP and kind == UDP_GRO and len(value) >= 4:
                    (size,) = _I32.unpack_from(value)
            if 0 < size < len(data):
                for i in range(0, len(data), size):
                    deliver(data[i : i + size], net)
            else:
                deliver(data, net)

    def flush(self) -> None:
        """Send the held datagrams: per destination in order; a multicast group first (every
        member, the next token holder too, takes its frames from it), then the destination
        of the last datagram, then the others latest last datagram first; each run of equal
        sizes in one segmented send if it can (without segmentation: in the order sent)."""
        held, self.held = self.held, []
        send = self._owner.count_sent
        if len(held) == 1 or not self._gso_limit:
            for packet, addr in held:
                send(self.send(packet, addr), packet)
            return
        by_dst: dict[Address, list[bytes]] = {}
        last: dict[Address, int] = {}
        for i, (packet, addr) in enumerate(held):
            by_dst.setdefault(addr, []).append(packet)
            last[addr] = i
        groups = self._owner.groups
        for addr in sorted(last, key=lambda a: (a not in groups, -last[a])):
            for run in runs(by_dst[addr], self._gso_limit):
                if len(run) == 1:
                    send(self.send(run[0], addr), run[0])
                else:
                    self._send_run(run, addr)

    def _send_run(self, run: list[bytes], addr: Address) -> None:
        """Send ``run`` to ``addr`` and count each datagram's outcome."""
        outcomes: list[bool | None]
        if self._queue:  # behind the datagrams already waiting, in order
            outcomes = [self._enqueue(packet, addr) for packet in run]
        else:
            outcomes = self._segmented(run, addr)
        for packet, sent in zip(run, outcomes, strict=True):
            self._owner.count_sent(sent, packet)

    def _segmented(self, run: list[bytes], addr: Address) -> list[bool | None]:
        """One segmented send of ``run``; queued if the socket is full, one ``sendto`` each
        if the kernel refuses it. The outcome of each datagram, as :meth:`send` gives it."""
        try:
            self.sock.sendmsg(run, [(SOL_UDP, UDP_SEGMENT, _U16.pack(len(run[0])))], 0, addr)
        except (BlockingIOError, InterruptedError):
            return [self._enqueue(packet, addr) for packet in run]
        except OSError as e:
            if e.errno in _GSO_TOO_BIG:
                self._gso_limit = min(self._gso_limit, len(run[0]) - 1)
            elif e.errno in _GSO_UNSUPPORTED:
                self._gso_limit = 0
            return [self.send(packet, addr) for packet in run]
        return [True] * len(run)

    def send(self, packet: bytes, addr: Address) -> bool | None:
        """Send now, or queue it; False if dropped because the queue is full, None if the
        kernel refused it (an unreachable peer, a datagram too large): lost, as UDP may."""
        if self._queue:
            return self._enqueue(packet, addr)
        try:
            self.sock.sendto(packet, addr)
        except (BlockingIOError, InterruptedError):
            return self._enqueue(packet, addr)
        except OSError:
            return None
        return True

    def _enqueue(self, packet: bytes, addr: Address) -> bool:
        if self.queued_bytes > self._owner.max_buffer:
            return False
        self._queue.append((packet, addr))
        self.queued_bytes += len(packet)
        if not self._writing:
            self._writing = True
            self._loop.add_writer(self.sock.fileno(), self._write_ready)
        return True

    def _write_ready(self) -> None:
        q = self._queue
        sendto = self.sock.sendto
        while q:
            packet, addr = q[0]
            try:
                sendto(packet, addr)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                pass
            q.popleft()
            self.queued_bytes -= len(packet)
        self._writing = False
        self._loop.remove_writer(self.sock.fileno())

    def close(self) -> None:
        fd = self.sock.fileno()
        if fd >= 0:
            self._loop.remove_reader(fd)
            if self._writing:
                self._loop.remove_writer(fd)
        self._writing = False
        self._queue.clear()
        self.held.clear()
        self.queued_bytes = 0
        self.sock.close()


def _udp_socket(bind: Address, *, reuse: bool = False) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
        sock.bind(bind)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class UdpTransport:
    """The node's sockets; ``send`` and ``multicast`` take already-sealed packets."""

    def __init__(
        self,
        addresses: tuple[Address, ...],
        *,
        groups: tuple[Address, ...] = (),
        max_buffer: int = 8 << 20,
        udp_offload: bool = True,
    ):
        self.addresses = addresses
        self.groups = groups
        self.max_buffer = max_buffer
        self.udp_offload = udp_offload
        self.corked = False
        self._holding: list[_Endpoint] = []  # endpoints with datagrams held while corked
        self._uni: list[_Endpoint] = []
        self._extra: list[_Endpoint] = []
        self.dropped_full = 0
        self.send_errors = 0
        self.packets_out = 0
        self.bytes_out = 0

    async def open(self, on_datagram: OnDatagram) -> None:
        loop = asyncio.get_running_loop()
        try:
            for net, addr in enumerate(self.addresses):
                sock = _udp_socket(addr)
                if self.groups:
                    sock.setsockopt(
                        socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr[0])
                    )
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
                try:
                    self._uni.append(_Endpoint(loop, sock, net, on_datagram, self))
                except BaseException:
                    sock.close()
                    raise
                if self.groups:
                    group = self.groups[net]
                    msock = _udp_socket(group, reuse=True)
                    try:
                        mreq = struct.pack(
                            "4s4s", socket.inet_aton(group[0]), socket.inet_aton(addr[0])
                        )
                        msock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
                        self._extra.append(_Endpoint(loop, msock, net, on_datagram, self))
                    except BaseException:
                        msock.close()
                        raise
        except BaseException:
            self.close()
            raise

    def send(self, packet: bytes, addr: Address, network: int) -> None:
        ep = self._uni[network]
        if self.corked:
            if not ep.held:
                self._holding.append(ep)
            ep.held.append((packet, addr))
        else:
            self.count_sent(ep.send(packet, addr), packet)

    def count_sent(self, sent: bool | None, packet: bytes) -> None:
        """Count one datagram: sent (True), dropped on a full queue (False), refused (None)."""
        if sent:
            self.packets_out += 1
            self.bytes_out += len(packet)
        elif sent is None:
            self.send_errors += 1
        else:
            self.dropped_full += 1

    def cork(self) -> None:
        """Hold every datagram sent from now until :meth:`uncork` (see the module's doc)."""
        self.corked = True

    def uncork(self) -> None:
        """Send what was held since :meth:`cork`, batched where the platform allows."""
        self.corked = False
        if self._holding:
            holding, self._holding = self._holding, []
            for ep in holding:
                ep.flush()

    def multicast(self, packet: bytes, network: int) -> None:
        """Send once to the network's group (``multicast`` mode only)."""
        self.send(packet, self.groups[network], network)

    def queued_bytes(self) -> int:
        """Bytes waiting in user space for the kernel's send buffers."""
        return sum(ep.queued_bytes for ep in self._uni)

    def close(self) -> None:
        for ep in (*self._uni, *self._extra):
            ep.close()
        self._uni.clear()
        self._extra.clear()
        self._holding.clear()
