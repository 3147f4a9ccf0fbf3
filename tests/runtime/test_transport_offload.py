"""Batched datagrams (UDP segmentation and receive offload, udp(7)): what a corked transport
sends, in which system calls, and what the receiving side hands on; the fall-backs when the
kernel refuses a segmented send or the socket is full; and the switch that turns it off.

All on loopback with sockets the tests make. Where the kernel has no UDP_SEGMENT (not
Linux, or Linux before 4.18) the datagrams and their order are still checked; only the
count of system calls is not.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path
from typing import Any

import pytest

from ringcast.runtime.config import ConfigError, load_config
from ringcast.runtime.transport import (
    MAX_RUN_BYTES,
    MAX_SEGMENTS,
    UdpTransport,
    _Endpoint,
    _has_gso,
    runs,
)

from .conftest import make_config


def _sizes(rs: list[list[bytes]]) -> list[list[int]]:
    return [[len(p) for p in r] for r in rs]


def test_runs_are_equal_sizes_ended_by_at_most_one_shorter_datagram() -> None:
    ps = [b"a" * 100] * 3 + [b"t" * 40] + [b"b" * 100] * 2 + [b"c" * 120] + [b"d" * 120]
    assert _sizes(runs(ps, 60_000)) == [[100, 100, 100, 40], [100, 100], [120, 120]]


def test_runs_respect_the_kernels_limits_and_the_paths_segment_size() -> None:
    many = [b"x" * 10] * (MAX_SEGMENTS + 3)
    assert _sizes(runs(many, 60_000)) == [[10] * MAX_SEGMENTS, [10] * 3]
    big = [b"y" * 9_000] * 9  # seven fit in MAX_RUN_BYTES
    assert _sizes(runs(big, 60_000)) == [[9_000] * (MAX_RUN_BYTES // 9_000), [9_000] * 2]
    # a datagram above the segment size the path takes goes on its own
    mixed = [b"s" * 50, b"s" * 50, b"L" * 2_000, b"s" * 50]
    assert _sizes(runs(mixed, 1_500)) == [[50, 50], [2_000], [50]]
    assert runs([], 60_000) == []


class _CountingSocket(socket.socket):
    """A UDP socket that records its send calls: (call, destination, datagrams)."""

    calls: list[tuple[str, Any, int]]
    refuse_segments: int = 0  # errno for sendmsg with UDP_SEGMENT, 0: let it through
    full = False

    def sendto(self, data: Any, addr: Any) -> int:  # type: ignore[override]
        if self.full:
            raise BlockingIOError
        self.calls.append(("sendto", addr, 1))
        return super().sendto(data, addr)

    def sendmsg(self, buffers: Any, ancdata: Any = (), flags: int = 0, addr: Any = None) -> int:  # type: ignore[override]
        if self.full:
            raise BlockingIOError
        if self.refuse_segments:
            raise OSError(self.refuse_segments, "refused")
        self.calls.append(("sendmsg", addr, len(buffers)))
        return super().sendmsg(buffers, ancdata, flags, addr)


def _sender(
    loop: asyncio.AbstractEventLoop, *, offload: bool = True, groups: tuple[Any, ...] = ()
) -> tuple[Any, Any, Any]:
    sock = _CountingSocket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.calls = []
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    owner = UdpTransport((sock.getsockname(),), groups=groups, udp_offload=offload)
    ep = _Endpoint(loop, sock, 0, lambda data, net: None, owner)
    owner._uni.append(ep)
    return sock, owner, ep


class _ReadCountingSocket(socket.socket):
    reads = 0

    def recv(self, *args: Any) -> bytes:  # type: ignore[override]
        self.reads += 1
        return super().recv(*args)

    def recvmsg(self, *args: Any) -> Any:  # type: ignore[override]
        self.reads += 1
        return super().recvmsg(*args)


class _Receiver:
    """A bound endpoint (with receive offload where the kernel has it) collecting datagrams."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, offload: bool = True):
        self.got: list[bytes] = []
        self._want = 0
        self._done: asyncio.Future[None] = loop.create_future()
        self.sock = sock = _ReadCountingSocket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        self.addr = sock.getsockname()
        self.ep = _Endpoint(loop, sock, 0, self._on, UdpTransport((), udp_offload=offload))

    def _on(self, data: bytes, net: int) -> None:
        self.got.append(bytes(data))
        if len(self.got) >= self._want and not self._done.done():
            self._done.set_result(None)

    async def wait(self, n: int) -> list[bytes]:
        self._want = n
        if len(self.got) < n:
            await asyncio.wait_for(self._done, 10)
        return self.got


def _frames(tag: int, n: int, size: int) -> list[bytes]:
    return [bytes([tag, k]) + b"." * (size - 2) for k in range(n)]


def test_a_corked_transport_sends_each_destinations_run_in_one_call_and_in_order() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        sock, tr, ep = _sender(loop)
        gro, plain = _Receiver(loop), _Receiver(loop, offload=False)
        try:
            frames_b = _frames(1, 17, 1_100)
            token = b"\x09token"
            frames_c = _frames(2, 17, 1_100)
            tr.cork()
            for fb, fc in zip(frames_b, frames_c, strict=True):  # a token visit: fan-out
                tr.send(fb, gro.addr, 0)
                tr.send(fc, plain.addr, 0)
            tr.send(token, gro.addr, 0)  # then the token, to one peer
            assert sock.calls == [], "nothing leaves while corked"
            tr.uncork()
            assert await gro.wait(18) == [*frames_b, token]
            assert await plain.wait(17) == frames_c
            assert tr.packets_out == 35
            assert tr.bytes_out == sum(map(len, [*frames_b, *frames_c, token]))
            if _has_gso(sock):
                # the destination of the last datagram (the token's) goes first
                assert sock.calls == [("sendmsg", gro.addr, 18), ("sendmsg", plain.addr, 17)]
                assert plain.sock.reads >= 17, "a receiver without offload reads each alone"
                if gro.ep._gro:
                    assert gro.sock.reads < 18, "the run arrived in fewer reads than datagrams"
            else:
                assert [c[0] for c in sock.calls] == ["sendto"] * 35
        finally:
            for e in (ep, gro.ep, plain.ep):
                e.close()

    asyncio.run(main())


def test_the_next_token_holder_is_flushed_first_then_the_latest_last_datagram() -> None:
    """Four nodes: a visit's frames fan out to three peers, then the token goes to the
    next holder. Its frames and the token leave first, in one call; the other peers
    follow, the one whose last datagram came later first; each peer's order is kept."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sock, tr, ep = _sender(loop)
        nxt, b, c = _Receiver(loop), _Receiver(loop), _Receiver(loop)
        try:
            frames = {r: _frames(k, 5, 900) for k, r in enumerate((nxt, b, c), start=1)}
            token = b"\x09token"
            tr.cork()
            for i in range(5):  # frame i to each peer, in ring order
                for r in (nxt, b, c):
                    tr.send(frames[r][i], r.addr, 0)
            tr.send(token, nxt.addr, 0)
            tr.uncork()
            assert await nxt.wait(6) == [*frames[nxt], token]
            assert await b.wait(5) == frames[b]
            assert await c.wait(5) == frames[c]
            if _has_gso(sock):
                assert sock.calls == [
                    ("sendmsg", nxt.addr, 6),  # the token's destination first
                    ("sendmsg", c.addr, 5),  # then the latest last datagram
                    ("sendmsg", b.addr, 5),
                ]
        finally:
            for e in (ep, nxt.ep, b.ep, c.ep):
                e.close()

    asyncio.run(main())


def test_in_multicast_mode_the_group_is_flushed_before_the_token() -> None:
    """``multicast`` mode: a visit's frames go once to the group, the token to the next
    holder; the token's destination is not the frames', so the group goes first."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        group, nxt = _Receiver(loop), _Receiver(loop)  # a socket stands in for the group
        sock, tr, ep = _sender(loop, groups=(group.addr,))
        try:
            frames = _frames(7, 5, 900)
            token = b"\x09token"
            tr.cork()
            for f in frames:
                tr.multicast(f, 0)
            tr.send(token, nxt.addr, 0)
            tr.uncork()
            assert await group.wait(5) == frames
            assert await nxt.wait(1) == [token]
            if _has_gso(sock):
                assert sock.calls == [("sendmsg", group.addr, 5), ("sendto", nxt.addr, 1)]
            else:
                assert sock.calls == [("sendto", group.addr, 1)] * 5 + [("sendto", nxt.addr, 1)]
        finally:
            for e in (ep, group.ep, nxt.ep):
                e.close()

    asyncio.run(main())


def test_uncorked_and_switched_off_transports_send_one_datagram_a_call() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        rx = _Receiver(loop)
        sock, tr, ep = _sender(loop)
        off_sock, off_tr, off_ep = _sender(loop, offload=False)
        try:
            frames = _frames(3, 4, 500)
            for f in frames:  # not corked: each goes at once
                tr.send(f, rx.addr, 0)
            assert [c[0] for c in sock.calls] == ["sendto"] * 4
            off_tr.cork()
            for f in frames:
                off_tr.send(f, rx.addr, 0)
            off_tr.uncork()
            assert [c[0] for c in off_sock.calls] == ["sendto"] * 4
            assert await rx.wait(8) == frames + frames
        finally:
            for e in (ep, off_ep, rx.ep):
                e.close()

    asyncio.run(main())


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.EIO])
def test_a_refused_segmented_send_falls_back_to_one_call_a_datagram(refusal: int) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        rx = _Receiver(loop)
        sock, tr, ep = _sender(loop)
        if not _has_gso(sock):
            pytest.skip("no UDP_SEGMENT on this kernel: nothing to refuse")
        try:
            sock.refuse_segments = refusal  # a segment size above the path's MTU, say
            first = _frames(4, 6, 1_200)
            tr.cork()
            for f in first:
                tr.send(f, rx.addr, 0)
            tr.uncork()
            assert await rx.wait(6) == first, "nothing lost, order kept"
            assert [c[0] for c in sock.calls] == ["sendto"] * 6
            assert ep._gso_limit < 1_200, "this size is not tried segmented again"
            sock.calls.clear()
            sock.refuse_segments = 0
            again = _frames(5, 3, 1_200)
            small = _frames(6, 3, 600)
            tr.cork()
            for f in again + small:
                tr.send(f, rx.addr, 0)
            tr.uncork()
            assert await rx.wait(12) == first + again + small
            if refusal == errno.EINVAL:  # too big: smaller segments are still tried
                assert sock.calls == [("sendto", rx.addr, 1)] * 3 + [("sendmsg", rx.addr, 3)]
            else:  # the path cannot segment at all: not tried again
                assert sock.calls == [("sendto", rx.addr, 1)] * 6
        finally:
            ep.close()
            rx.ep.close()

    asyncio.run(main())


def test_a_full_socket_queues_the_run_and_drains_it_in_order() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        rx = _Receiver(loop)
        sock, tr, ep = _sender(loop)
        try:
            sock.full = True
            frames = _frames(7, 5, 800)
            tr.cork()
            for f in frames:
                tr.send(f, rx.addr, 0)
            tr.uncork()
            assert ep.queued_bytes == 5 * 800
            later = _frames(8, 2, 800)
            tr.cork()
            for f in later:
                tr.send(f, rx.addr, 0)
            tr.uncork()  # behind the queue, not ahead of it
            assert ep.queued_bytes == 7 * 800
            sock.full = False
            assert await rx.wait(7) == frames + later
            assert ep.queued_bytes == 0
        finally:
            ep.close()
            rx.ep.close()

    asyncio.run(main())


def test_udp_offload_is_a_boolean_cluster_key(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A", "B"], "basic")
    assert cfg.udp_offload is True
    path = tmp_path / "cluster.toml"
    text = path.read_text().replace("[cluster]\n", "[cluster]\nudp_offload = false\n", 1)
    path.write_text(text)
    assert load_config(path).udp_offload is False
    path.write_text(text.replace("udp_offload = false", 'udp_offload = "no"'))
    with pytest.raises(ConfigError, match=r"cluster\.udp_offload: expected true or false"):
        load_config(path)
