"""The host's parts on their own: the timer table, the socket endpoint's send queue, the
replay window, the Group's burst and batch calls, and the status endpoint's long poll."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from ringcast.core.effects import CancelTimer, SetTimer
from ringcast.core.events import TimerFired
from ringcast.runtime import Delivery, Group
from ringcast.runtime.security import REPLAY_WINDOW, _Window
from ringcast.runtime.status import StatusServer, fetch_status
from ringcast.runtime.transport import UdpTransport, _Endpoint

from .conftest import fetch_json, make_config, until

MS = 1_000_000


class _Recorder:
    """Stands in for a protocol machine: records the events it is fed."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def handle(self, event: Any, now: int) -> list[Any]:
        self.events.append(event)
        return []


def test_timer_table_fires_by_deadline_and_honours_cancel_and_rearm(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A"], "basic")

    async def main() -> None:
        async with Group.join(cfg, "A") as g:
            host = g.host
            rec = _Recorder()
            host._machine = rec  # type: ignore[assignment]
            host._timers.clear()
            host._apply(
                [
                    SetTimer("late", 40 * MS),
                    SetTimer("gone", 5 * MS),
                    SetTimer("early", 10 * MS),
                    SetTimer("moved", 1 * MS),
                ]
            )
            host._apply([CancelTimer("gone"), SetTimer("moved", 25 * MS)])
            fired = lambda: [e.name for e in rec.events if type(e) is TimerFired]  # noqa: E731
            await until(lambda: len(fired()) >= 3, 10, "three timers", g)
            assert fired() == ["early", "moved", "late"]
            assert host._timers == {}
            # The table keeps serving timers set later.
            host._apply([SetTimer("again", 1 * MS)])
            await until(lambda: fired().count("again") == 1, 10, "the re-armed timer", g)

    asyncio.run(main())


class _FullSocket(socket.socket):
    """A UDP socket whose kernel buffer can be declared full."""

    full = False

    def sendto(self, *args: Any) -> int:  # type: ignore[override]
        if self.full:
            raise BlockingIOError
        return super().sendto(*args)


def test_endpoint_queues_when_the_kernel_is_full_and_drops_past_max_buffer() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        got: list[bytes] = []
        all_in = loop.create_future()

        def on_rx() -> None:
            while True:
                try:
                    got.append(rx.recv(65536))
                except BlockingIOError:
                    break
            if len(got) >= 3 and not all_in.done():
                all_in.set_result(None)

        loop.add_reader(rx.fileno(), on_rx)
        sock = _FullSocket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        owner = UdpTransport((sock.getsockname(),), max_buffer=250)
        ep = _Endpoint(loop, sock, 0, lambda data, net: None, owner)
        try:
            sock.full = True
            dst = rx.getsockname()
            assert all(ep.send(bytes([k]) * 100, dst) for k in range(3))
            assert ep.queued_bytes == 300
            assert not ep.send(b"x" * 100, dst), "past max_buffer: dropped"
            sock.full = False  # the socket is writable: the queue drains in order
            await asyncio.wait_for(all_in, 10)
            assert got == [bytes([k]) * 100 for k in range(3)]
            assert ep.queued_bytes == 0
        finally:
            loop.remove_reader(rx.fileno())
            ep.close()
            rx.close()

    asyncio.run(main())


def test_replay_window_survives_a_huge_jump() -> None:
    w = _Window(5)
    assert w.accept(10**18)  # a restarted sender starts near the wall clock in ns
    assert not w.accept(10**18)
    assert not w.accept(6)
    assert w.accept(10**18 - REPLAY_WINDOW + 1)
    assert not w.accept(10**18 - REPLAY_WINDOW)


def test_multicast_many_batches_and_wait_for(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A"], "totem", settings={"consensus_timeout": "20ms"})

    async def main() -> None:
        async with Group.join(cfg, "A") as g:
            await g.wait_view(timeout=10)
            g.subscribe()
            payloads = [b"m%d" % k for k in range(600)]  # beyond max_pending: flow control
            ids = await g.multicast_many(iter(payloads))
            assert len(ids) == len(set(ids)) == 600
            got: list[Delivery] = []
            async for batch in g.batches():
                got += [e for e in batch if isinstance(e, Delivery)]
                if len(got) >= 600:
                    break
            assert [d.payload for d in got] == payloads
            assert [d.msg_id for d in got] == ids
            await g.wait_for(lambda: g.host.metrics.delivered >= 600, 10)

    asyncio.run(main())


def test_status_long_poll() -> None:
    async def main() -> None:
        state = {"delivered": 0}
        change: list[asyncio.Future[None]] = []
        asked = asyncio.Event()  # the server waits for a change

        def changed() -> asyncio.Future[None]:
            fut = asyncio.get_running_loop().create_future()
            change.append(fut)
            asked.set()
            return fut

        def bump() -> None:
            state["delivered"] += 1
            while change:
                f = change.pop()
                if not f.done():
                    f.set_result(None)

        def status() -> dict[str, Any]:
            return {
                "node": "A",
                "view": {"id": "1", "members": ["A", "B"], "transitional": False},
                "metrics": {"delivered": state["delivered"]},
            }

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            addr = s.getsockname()
        srv = StatusServer(addr, status, changed=changed)
        await srv.start()
        try:
            waiting = asyncio.create_task(fetch_json(addr, "delivered=3&wait=30", timeout=40))
            for _ in range(3):
                await asyncio.wait_for(asked.wait(), 10)
                asked.clear()
                bump()
            st = await waiting
            assert st["condition_met"] is True and st["metrics"]["delivered"] == 3
            st = await fetch_json(addr, "members=A,B&wait=5")
            assert st["condition_met"] is True
            st = await fetch_json(addr, "members=A&wait=0")
            assert st["condition_met"] is False
            assert "condition_met" not in await fetch_json(addr)
            try:
                await fetch_status(addr, "/status?delivered=x")
            except ConnectionError as e:
                assert "400" in str(e)
            else:
                raise AssertionError("a bad query must be refused")
        finally:
            await srv.close()

    asyncio.run(main())


def test_a_datagram_the_kernel_refuses_is_reported_not_swallowed() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        owner = UdpTransport((sock.getsockname(),), max_buffer=1 << 20)
        ep = _Endpoint(loop, sock, 0, lambda data, net: None, owner)
        try:
            assert ep.send(b"x" * 70_000, sock.getsockname()) is None  # EMSGSIZE
            assert ep.send(b"x" * 100, sock.getsockname()) is True
        finally:
            ep.close()

    asyncio.run(main())
