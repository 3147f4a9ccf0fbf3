"""The status endpoint on aiohttp and prometheus-client: malformed requests are
answered (400, 404, 405) without harming the server, ``/metrics`` keeps its metric
names in the Prometheus text format, and a closing server ends its long polls."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ringcast.runtime.status import StatusServer, fetch_status, prometheus_text

STATUS: dict[str, Any] = {
    "node": "A",
    "cluster": "c1",
    "blocked": False,
    "view": {"id": "1", "members": ["A", "B"], "transitional": False},
    "metrics": {
        "delivered": 7,
        "submitted": 3,
        "tokens": 11,
        "views": 1,
        "packets_in": 20,
        "packets_out": 21,
        "bytes_in": 2000,
        "bytes_out": 2100,
        "drops": {"bad_mac": 2, "replay": 0},
        "uptime_s": 1.5,
    },
}
NAMES = {
    "ringcast_delivered_total": 7,
    "ringcast_submitted_total": 3,
    "ringcast_token_total": 11,
    "ringcast_views_total": 1,
    "ringcast_packets_in_total": 20,
    "ringcast_packets_out_total": 21,
    "ringcast_bytes_in_total": 2000,
    "ringcast_bytes_out_total": 2100,
    "ringcast_view_members": 2,
    "ringcast_blocked": 0,
    "ringcast_uptime_seconds": 1.5,
}


def _free_addr() -> tuple[str, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()


async def _raw(addr: tuple[str, int], data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(*addr)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()


def test_prometheus_text_keeps_the_metric_names_and_labels() -> None:
    text = prometheus_text(STATUS)
    samples = {
        (s.name, s.labels.get("reason")): s
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if not s.name.endswith("_created")
    }
    for name, value in NAMES.items():
        s = samples[(name, None)]
        assert s.value == value and s.labels["node"] == "A" and s.labels["cluster"] == "c1"
    assert samples[("ringcast_dropped_total", "bad_mac")].value == 2
    assert "# TYPE ringcast_delivered_total counter" in text
    assert "# TYPE ringcast_view_members gauge" in text


def test_malformed_requests_are_refused_and_the_server_stays_up() -> None:
    async def main() -> None:
        addr = _free_addr()
        srv = StatusServer(addr, lambda: dict(STATUS))
        await srv.start()
        try:
            bad = [
                b"\x00\x01\x02garbage\r\n\r\n",
                b"GET\r\n\r\n",
                b"GET /status HTTP/9.9\r\n\r\n",
                b"GET /status HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n",
                b"GET /st\xffatus HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /status HTTP/1.1\r\nContent-Length: -5\r\nHost: x\r\n\r\n",
            ]
            for req in bad:
                answer = await _raw(addr, req)
                status_line = answer.split(b"\r\n", 1)[0]
                assert status_line.startswith(b"HTTP/1.") and b" 4" in status_line, (req, answer)
            answer = await _raw(addr, b"POST /status HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b" 405 " in answer.split(b"\r\n", 1)[0]
            answer = await _raw(addr, b"GET /nowhere HTTP/1.0\r\n\r\n")
            assert b" 404 " in answer.split(b"\r\n", 1)[0]
            answer = await _raw(addr, b"GET /status?wait=soon HTTP/1.0\r\n\r\n")
            assert b" 400 " in answer.split(b"\r\n", 1)[0] and b"bad query" in answer
            # a request cut short then closed, and one never finished, harm nothing
            _, w = await asyncio.open_connection(*addr)
            w.write(b"GET /sta")
            await w.drain()
            w.close()
            # an HTTP/1.0 client without Host still gets its answer, as before
            answer = await _raw(addr, b"GET /status HTTP/1.0\r\n\r\n")
            assert b" 200 " in answer.split(b"\r\n", 1)[0] and b'"node": "A"' in answer
            metrics = await fetch_status(addr, "/metrics")
            assert "ringcast_delivered_total{" in metrics
            try:
                await fetch_status(addr, "/status?delivered=x")
            except ConnectionError as e:
                assert "400" in str(e)
            else:
                raise AssertionError("a bad query must be refused")
        finally:
            await srv.close()

    asyncio.run(main())


def test_close_ends_a_waiting_long_poll() -> None:
    async def main() -> None:
        addr = _free_addr()
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = asyncio.Event()

        def changed() -> asyncio.Future[None]:
            waiting.set()  # the server waits for the node's next change
            return asyncio.shield(never)

        srv = StatusServer(addr, lambda: dict(STATUS), changed=changed)
        await srv.start()
        poll = asyncio.create_task(fetch_status(addr, "/status?delivered=99&wait=60", 30))
        await asyncio.wait_for(waiting.wait(), 20)
        assert srv._active
        await asyncio.wait_for(srv.close(), 10)  # does not wait out the 60 s poll
        with contextlib.suppress(ConnectionError, OSError):  # cut off with the server
            await asyncio.wait_for(poll, 10)
        assert poll.done() and not srv._active

    asyncio.run(main())


def test_the_endpoint_binds_the_address_it_is_given() -> None:
    async def main() -> None:
        addr = _free_addr()
        srv = StatusServer(addr, lambda: dict(STATUS))
        await srv.start()
        try:
            assert srv._runner is not None
            bound = {a[:2] for a in srv._runner.addresses}
            assert bound == {addr}
        finally:
            await srv.close()

    asyncio.run(main())
