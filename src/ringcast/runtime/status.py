"""A node's status endpoint: ``GET /status`` (JSON) and ``GET /metrics`` (Prometheus text).

Plain asyncio streams, HTTP/1.0 style: one request a connection, bound to localhost.

``GET /status`` can wait for a condition (a long poll, so scripts and tests need not
poll): ``members=a,b,c`` (a regular view of exactly these members), ``delivered=N``
(at least N deliveries), and ``wait=SECONDS`` (at most 60) for how long to wait. The
answer comes as soon as every given condition holds, or when the wait is over,
with ``"condition_met": true`` or ``false`` added to the status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from ringcast.runtime.config import Address

StatusFn = Callable[[], dict[str, Any]]
ChangedFn = Callable[[], Awaitable[None]]
MAX_WAIT = 60.0


def _condition(query: str) -> tuple[Callable[[dict[str, Any]], bool] | None, float]:
    """The long-poll condition and wait time of a ``/status`` query string."""
    params = dict(urllib.parse.parse_qsl(query))
    wait = min(max(float(params.get("wait", 0)), 0.0), MAX_WAIT)
    tests: list[Callable[[dict[str, Any]], bool]] = []
    if "members" in params:
        want = {m for m in params["members"].split(",") if m}

        def members_ok(st: dict[str, Any]) -> bool:
            v = st["view"]
            return bool(v) and not v["transitional"] and set(v["members"]) == want

        tests.append(members_ok)
    if "delivered" in params:
        least = int(params["delivered"])
        tests.append(lambda st: st["metrics"]["delivered"] >= least)
    if not tests:
        return None, wait
    return (lambda st: all(t(st) for t in tests)), wait


def prometheus_text(status: dict[str, Any]) -> str:
    """The node's counters in the Prometheus text exposition format."""
    m = status["metrics"]
    labels = f'node="{status["node"]}",cluster="{status["cluster"]}"'
    out: list[str] = []

    def metric(name: str, kind: str, help_: str, value: float, extra: str = "") -> None:
        if not any(line.startswith(f"# TYPE ringcast_{name} ") for line in out):
            out.append(f"# HELP ringcast_{name} {help_}")
            out.append(f"# TYPE ringcast_{name} {kind}")
        lab = labels + (f",{extra}" if extra else "")
        out.append(f"ringcast_{name}{{{lab}}} {value}")

    metric("delivered_total", "counter", "Messages delivered.", m["delivered"])
    metric("submitted_total", "counter", "Messages multicast by this node.", m["submitted"])
    metric("token_total", "counter", "Token visits recorded by the protocol.", m["tokens"])
    metric("views_total", "counter", "Views installed.", m["views"])
    metric("packets_in_total", "counter", "Datagrams received.", m["packets_in"])
    metric("packets_out_total", "counter", "Datagrams sent.", m["packets_out"])
    metric("bytes_in_total", "counter", "Bytes received.", m["bytes_in"])
    metric("bytes_out_total", "counter", "Bytes sent.", m["bytes_out"])
    for reason, n in sorted(m["drops"].items()):
        metric("dropped_total", "counter", "Datagrams dropped.", n, f'reason="{reason}"')
    v = status["view"]
    metric("view_members", "gauge", "Members of the current view.", len(v["members"]) if v else 0)
    metric("blocked", "gauge", "1 while flow control holds submits.", int(status["blocked"]))
    metric("uptime_seconds", "gauge", "Seconds since the node started.", m["uptime_s"])
    return "\n".join(out) + "\n"


class StatusServer:
    """Serves ``status()`` on ``addr`` until closed."""

    def __init__(self, addr: Address, status: StatusFn, changed: ChangedFn | None = None):
        self.addr = addr
        self.status = status
        self.changed = changed  # awaitable at the node's next change (for long polls)
        self._server: asyncio.AbstractServer | None = None
        self._active: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.addr[0], self.addr[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._active):  # long polls still waiting
                task.cancel()
            await self._server.wait_closed()

    async def _wait(
        self, cond: Callable[[dict[str, Any]], bool] | None, wait: float
    ) -> dict[str, Any]:
        """The status once ``cond`` holds, or when ``wait`` seconds are over."""
        st = self.status()
        if cond is None:
            return st
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while not cond(st):
            left = deadline - loop.time()
            if left <= 0 or self.changed is None:
                st["condition_met"] = False
                return st
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed(), left)
            st = self.status()
        st["condition_met"] = True
        return st

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._active.add(task)
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            parts = line.decode("latin-1").split()
            target = parts[1] if len(parts) >= 2 else ""
            path, _, query = target.partition("?")
            if len(parts) < 2 or parts[0] != "GET":
                code, ctype, body = "405 Method Not Allowed", "text/plain", "GET only\n"
            elif path == "/status":
                try:
                    cond, wait = _condition(query)
                except ValueError as e:
                    cond, wait = None, 0.0
                    code, ctype, body = "400 Bad Request", "text/plain", f"bad query: {e}\n"
                else:
                    code, ctype = "200 OK", "application/json"
                    st = await self._wait(cond, wait)
                    body = json.dumps(st, default=str) + "\n"
            elif path == "/metrics":
                code, ctype = "200 OK", "text/plain; version=0.0.4"
                body = prometheus_text(self.status())
            else:
                code, ctype, body = "404 Not Found", "text/plain", "try /status or /metrics\n"
            data = body.encode()
            writer.write(
                f"HTTP/1.0 {code}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
                f"Connection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            self._active.discard(task)  # type: ignore[arg-type]
            writer.close()


async def fetch_status(addr: Address, path: str = "/status", timeout: float = 2.0) -> str:
    """GET ``path`` from a node's status endpoint; return the body."""

    async def go() -> str:
        reader, writer = await asyncio.open_connection(addr[0], addr[1])
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        if " 200 " not in status_line + " ":
            raise ConnectionError(f"{addr[0]}:{addr[1]}{path}: {status_line}")
        return body.decode()

    return await asyncio.wait_for(go(), timeout)
