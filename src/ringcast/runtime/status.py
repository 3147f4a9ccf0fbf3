"""A node's status endpoint: ``GET /status`` (JSON) and ``GET /metrics`` (Prometheus text).

Plain asyncio streams, HTTP/1.0 style: one request a connection, bound to localhost.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ringcast.runtime.config import Address

StatusFn = Callable[[], dict[str, Any]]


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

    def __init__(self, addr: Address, status: StatusFn):
        self.addr = addr
        self.status = status
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.addr[0], self.addr[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            parts = line.decode("latin-1").split()
            path = parts[1] if len(parts) >= 2 else ""
            path = path.split("?", 1)[0]
            if len(parts) < 2 or parts[0] != "GET":
                code, ctype, body = "405 Method Not Allowed", "text/plain", "GET only\n"
            elif path == "/status":
                code, ctype = "200 OK", "application/json"
                body = json.dumps(self.status(), default=str) + "\n"
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
