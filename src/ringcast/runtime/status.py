"""A node's status endpoint: ``GET /status`` (JSON) and ``GET /metrics`` (Prometheus).

HTTP is aiohttp's (its parser answers a malformed request with 400 and a wrong
method with 405; nothing here parses HTTP); the address is the node's ``status``
setting, localhost in the examples. ``/metrics`` is ``prometheus-client``'s text
exposition of a registry of the server's own, filled from the node's status at each
scrape.

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
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ringcast.runtime.config import Address

StatusFn = Callable[[], dict[str, Any]]
ChangedFn = Callable[[], Awaitable[None]]
MAX_WAIT = 60.0
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

COUNTERS = (  # name (without _total), key in status["metrics"], help
    ("ringcast_delivered", "delivered", "Messages delivered."),
    ("ringcast_submitted", "submitted", "Messages multicast by this node."),
    ("ringcast_token", "tokens", "Token visits recorded by the protocol."),
    ("ringcast_views", "views", "Views installed."),
    ("ringcast_packets_in", "packets_in", "Datagrams received (handled + dropped)."),
    ("ringcast_packets_handled", "handled", "Datagrams received and handed to the protocol."),
    ("ringcast_handler_errors", "handler_errors", "Received messages the protocol failed on."),
    ("ringcast_packets_out", "packets_out", "Datagrams sent."),
    ("ringcast_bytes_in", "bytes_in", "Bytes received."),
    ("ringcast_bytes_out", "bytes_out", "Bytes sent."),
)

REASONED = (  # name (without _total), key in status["metrics"], help; labelled by reason
    ("ringcast_dropped", "drops", "Received datagrams dropped before the protocol saw them."),
    ("ringcast_send_dropped", "send_drops", "Datagrams this node did not send."),
    (
        "ringcast_protocol_dropped",
        "protocol_drops",
        "Messages, submits or timers the protocol threw away (its drop records).",
    ),
)


def _condition(params: Mapping[str, str]) -> tuple[Callable[[dict[str, Any]], bool] | None, float]:
    """The long-poll condition and wait time of a ``/status`` query (ValueError when a
    value is not a number)."""
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


class NodeCollector(Collector):
    """The node's counters and gauges, read from its status at each collection."""

    def __init__(self, status: StatusFn):
        self.status = status

    def collect(self) -> Iterator[Metric]:
        st = self.status()
        m = st["metrics"]
        names = ["node", "cluster"]
        values = [str(st.get("node", "")), str(st.get("cluster", ""))]
        for name, key, help_ in COUNTERS:
            c = CounterMetricFamily(name, help_, labels=names)
            c.add_metric(values, m.get(key, 0))
            yield c
        for name, key, help_ in REASONED:
            family = CounterMetricFamily(name, help_, labels=[*names, "reason"])
            for reason, n in sorted((m.get(key) or {}).items()):
                family.add_metric([*values, reason], n)
            yield family
        v = st.get("view")
        gauges = (
            (
                "ringcast_view_members",
                "Members of the current view.",
                len(v["members"]) if v else 0,
            ),
            (
                "ringcast_blocked",
                "1 while flow control holds submits.",
                int(bool(st.get("blocked"))),
            ),
            ("ringcast_uptime_seconds", "Seconds since the node started.", m.get("uptime_s", 0)),
        )
        for name, help_, value in gauges:
            g = GaugeMetricFamily(name, help_, labels=names)
            g.add_metric(values, value)
            yield g


def registry_for(status: StatusFn) -> CollectorRegistry:
    """A registry of its own (not the process-wide default) holding the node's metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(status))
    return registry


def prometheus_text(status: dict[str, Any]) -> str:
    """The node's metrics in the Prometheus text exposition format."""
    return generate_latest(registry_for(lambda: status)).decode()


class StatusServer:
    """Serves ``status()`` on ``addr`` until closed."""

    def __init__(self, addr: Address, status: StatusFn, changed: ChangedFn | None = None):
        self.addr = addr
        self.status = status
        self.changed = changed  # awaitable at the node's next change (for long polls)
        self.registry = registry_for(status)
        self._runner: web.AppRunner | None = None
        self._active: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/status", self._status)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        await web.TCPSite(self._runner, self.addr[0], self.addr[1]).start()

    async def close(self) -> None:
        if self._runner is not None:
            for task in list(self._active):  # long polls still waiting
                task.cancel()
            await self._runner.cleanup()
            self._runner = None

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

    async def _status(self, request: web.Request) -> web.StreamResponse:
        try:
            cond, wait = _condition(request.query)
        except ValueError as e:
            return web.Response(status=400, text=f"bad query: {e}\n")
        task = asyncio.current_task()
        if task is not None:
            self._active.add(task)
        try:
            st = await self._wait(cond, wait)
        finally:
            self._active.discard(task)  # type: ignore[arg-type]
        return web.Response(
            text=json.dumps(st, default=str) + "\n", content_type="application/json"
        )

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})


async def fetch_status(addr: Address, path: str = "/status", timeout: float = 2.0) -> str:
    """GET ``path`` from a node's status endpoint; return the body. Raises
    ConnectionError (naming the status line) on an answer other than 200, OSError when
    nothing listens, TimeoutError after ``timeout`` seconds."""
    url = f"http://{addr[0]}:{addr[1]}{path}"
    try:
        async with (
            ClientSession(timeout=ClientTimeout(total=timeout)) as session,
            session.get(url) as resp,
        ):
            body = await resp.text()
            if resp.status != 200:
                raise ConnectionError(f"{addr[0]}:{addr[1]}{path}: {resp.status} {resp.reason}")
            return body
    except ClientError as e:
        if isinstance(e, OSError | TimeoutError):
            raise
        raise ConnectionError(f"{addr[0]}:{addr[1]}{path}: {e}") from e
