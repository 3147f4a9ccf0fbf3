"""UDP sockets for one node: one endpoint a configured network.

Two modes, as in corosync: ``udpu`` sends a multicast as one unicast datagram to each
peer (fan-out); ``multicast`` sends it once to the network's IP multicast group, which
every node joins. Unicast sends are plain datagrams to the peer's address in both
modes. In ``multicast`` mode each network has a second socket bound to the group.

Sending never blocks and never queues without bound: when the kernel's socket
buffer is full, asyncio keeps the datagram in the transport's buffer, and once that
holds more than ``max_buffer`` bytes further datagrams are dropped (UDP semantics;
the protocol retransmits) and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable

from ringcast.runtime.config import Address

SOCKET_BUFFER = 4 << 20

OnDatagram = Callable[[bytes, int], None]


class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, network: int, on_datagram: OnDatagram):
        self.network = network
        self.on_datagram = on_datagram
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.on_datagram(data, self.network)

    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable from a peer that is down, and the like: UDP carries on.
        pass


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
        self._uni: list[asyncio.DatagramTransport] = []
        self._extra: list[asyncio.DatagramTransport] = []
        self.dropped_full = 0
        self.packets_out = 0
        self.bytes_out = 0

    async def open(self, on_datagram: OnDatagram) -> None:
        loop = asyncio.get_running_loop()
        try:
            for net, addr in enumerate(self.addresses):
                sock = _udp_socket(addr)
                if self.groups:
                    group = self.groups[net]
                    sock.setsockopt(
                        socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr[0])
                    )
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
                tr, _ = await loop.create_datagram_endpoint(
                    lambda net=net: _Endpoint(net, on_datagram), sock=sock
                )
                self._uni.append(tr)
                if self.groups:
                    msock = _udp_socket(self.groups[net], reuse=True)
                    mreq = struct.pack(
                        "4s4s", socket.inet_aton(group[0]), socket.inet_aton(addr[0])
                    )
                    msock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
                    mtr, _ = await loop.create_datagram_endpoint(
                        lambda net=net: _Endpoint(net, on_datagram), sock=msock
                    )
                    self._extra.append(mtr)
        except BaseException:
            self.close()
            raise

    def send(self, packet: bytes, addr: Address, network: int) -> None:
        tr = self._uni[network]
        if tr.get_write_buffer_size() > self.max_buffer:
            self.dropped_full += 1
            return
        tr.sendto(packet, addr)
        self.packets_out += 1
        self.bytes_out += len(packet)

    def multicast(self, packet: bytes, network: int) -> None:
        """Send once to the network's group (``multicast`` mode only)."""
        self.send(packet, self.groups[network], network)

    def close(self) -> None:
        for tr in (*self._uni, *self._extra):
            tr.close()
        self._uni.clear()
        self._extra.clear()
