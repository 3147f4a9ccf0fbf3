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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import struct
from collections.abc import Callable

from ringcast.runtime.config import Address

SOCKET_BUFFER = 4 << 20
READ_BATCH = 64
"""Datagrams read from one socket per wake-up before other callbacks get a turn."""
MAX_DATAGRAM = 65536

OnDatagram = Callable[[bytes, int], None]


class _Endpoint:
    """One bound socket: reads in batches, sends directly, queues only when the kernel is full."""

    __slots__ = (
        "_loop",
        "_owner",
        "_queue",
        "_writing",
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
        loop.add_reader(sock.fileno(), self._read_ready)

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
    ):
        self.addresses = addresses
        self.groups = groups
        self.max_buffer = max_buffer
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
        sent = self._uni[network].send(packet, addr)
        if sent:
            self.packets_out += 1
            self.bytes_out += len(packet)
        elif sent is None:
            self.send_errors += 1
        else:
            self.dropped_full += 1

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
