"""Shared helpers for the runtime tests: loopback clusters in a temporary directory."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ringcast.protocols import registry
from ringcast.runtime.cluster import free_port
from ringcast.runtime.config import ClusterConfig, load_config, render_config
from ringcast.runtime.group import wait_for_change
from ringcast.runtime.security import write_key_file
from ringcast.runtime.status import fetch_status

from .netns import Lab, NetnsUnavailable, lab

# Protocols registered now (raincore and totem register themselves when present).
PROTOCOLS = registry.builtin_names()  # not the probes other test modules register
TOTAL_ORDER = [p for p in PROTOCOLS if p in ("raincore", "totem")]

# The hosts of the namespace labs (tests/runtime/netns.py); one subnet a network, and
# the one-bridge and two-bridge labs on subnets of their own.
NETNS_HOSTS = ["n1", "n2", "n3"]


@pytest.fixture
def bridge_lab() -> Iterator[Lab]:
    """Three hosts on one bridge (10.213.77.0/24); removed afterwards."""
    try:
        with lab(NETNS_HOSTS, ["10.213.77"]) as the_lab:
            yield the_lab
    except NetnsUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture
def two_bridge_lab() -> Iterator[Lab]:
    """Three hosts, each on two bridges (10.213.81.0/24, 10.213.82.0/24); removed
    afterwards."""
    try:
        with lab(NETNS_HOSTS, ["10.213.81", "10.213.82"], prefix="rc2") as the_lab:
            yield the_lab
    except NetnsUnavailable as e:
        pytest.skip(str(e))


def make_config(
    directory: Path,
    nodes: list[str],
    protocol: str,
    *,
    settings: Mapping[str, Any] | None = None,
    security: str = "hmac",
    name: str = "test",
    trace_format: str = "jsonl",
    addresses: Mapping[str, str] | None = None,
    networks: int = 1,
    trace_packets: bool = False,
) -> ClusterConfig:
    """Write a loopback cluster file (ephemeral ports, ``networks`` addresses a node)
    and a key; return the loaded config."""
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "cluster.key"
    if not key.exists():
        write_key_file(key)
    entries = [
        (
            n,
            [(addresses or {}).get(n) or f"127.0.0.1:{free_port()}"]
            + [f"127.0.0.1:{free_port()}" for _ in range(networks - 1)],
            None,
        )
        for n in nodes
    ]
    text = render_config(
        name=name,
        protocol=protocol,
        nodes=entries,
        settings=settings,
        security=security,
        trace_format=trace_format,
        trace_packets=trace_packets,
    )
    path = directory / "cluster.toml"
    path.write_text(text)
    return load_config(path)


async def until(pred: Callable[[], bool], timeout: float, what: str, *watch: Any) -> None:
    """Await ``pred()`` becoming true, at most ``timeout`` s.

    ``watch`` names the groups (or hosts) whose state the predicate reads: it is
    re-checked each time one of them changes state (a datagram, a protocol event, a
    delivery, a view), never on a clock.
    """
    hosts = [getattr(w, "host", w) for w in watch]
    try:
        await wait_for_change(pred, hosts, timeout)
    except TimeoutError:
        pytest.fail(f"timed out after {timeout}s waiting for {what}")


async def fetch_json(addr: tuple[str, int], query: str = "", timeout: float = 2.0) -> Any:
    """A node's ``/status`` (optionally a long poll, see ringcast.runtime.status)."""
    path = "/status" + (f"?{query}" if query else "")
    return json.loads(await fetch_status(addr, path, timeout=timeout))


async def await_status(
    addr: tuple[str, int], timeout: float, *, members: set[str] | None = None, delivered: int = 0
) -> dict[str, Any]:
    """Long-poll a node (another process) until its view is ``members`` and it delivered
    at least ``delivered`` messages; fail after ``timeout`` s. The node answers when the
    condition holds, so nothing here polls on a clock."""
    query = {"wait": f"{timeout:.3f}"}
    if members is not None:
        query["members"] = ",".join(sorted(members))
    if delivered:
        query["delivered"] = str(delivered)
    st = await fetch_json(addr, urllib.parse.urlencode(query), timeout=timeout + 5)
    if not st.get("condition_met"):
        view = st["view"] and st["view"]["members"]
        pytest.fail(
            f"{st['node']}: not reached within {timeout}s: want members={members} "
            f"delivered>={delivered}; has view {view}, delivered {st['metrics']['delivered']}"
        )
    return st


class LogWatch:
    """Follows a node process's JSON-lines log file without polling it on a clock.

    The file's directory is watched with inotify (Linux): the reader sleeps in
    ``select`` until the kernel reports a write, then parses the new complete lines.
    ``records`` holds every JSON record read so far, in file order.
    """

    _IN_MODIFY, _IN_CLOSE_WRITE, _IN_CREATE, _IN_MOVED_TO = 0x2, 0x8, 0x100, 0x80

    def __init__(self, path: Path):
        self.path = path
        self.records: list[dict[str, Any]] = []
        self._pos = 0
        self._partial = b""
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        path.parent.mkdir(parents=True, exist_ok=True)
        mask = self._IN_MODIFY | self._IN_CLOSE_WRITE | self._IN_CREATE | self._IN_MOVED_TO
        if libc.inotify_add_watch(self._fd, str(path.parent).encode(), mask) < 0:
            os.close(self._fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path.parent} failed")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _read_new(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return
        self._pos += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # not a log record (e.g. a traceback line)
            if isinstance(rec, dict):
                self.records.append(rec)

    def refresh(self) -> None:
        """Read what the node logged since the last read."""
        self._read_new()

    def drain(self) -> None:
        """Consume the pending change notifications (the file says the rest)."""
        with contextlib.suppress(BlockingIOError):
            os.read(self._fd, 65536)

    def fileno(self) -> int:
        return self._fd

    def wait_for(
        self, pred: Callable[[list[dict[str, Any]]], bool], timeout: float, what: str
    ) -> None:
        """Until ``pred(records)`` holds; fail after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            self._read_new()
            if pred(self.records):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"{self.path.name}: {what}: not seen within {timeout}s")
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._fd, 65536)  # drain the events; the file says the rest

    def wait_ready(self, since: int, timeout: float) -> None:
        """Until a "node ready" record appears after the first ``since`` records."""
        self.wait_for(
            lambda recs: any(r.get("msg") == "node ready" for r in recs[since:]),
            timeout,
            "node ready",
        )

    def last_view_id(self) -> str | None:
        """The id of the last regular view this log reports installed."""
        for r in reversed(self.records):
            if r.get("msg") == "view installed" and not r.get("transitional"):
                return str(r.get("view"))
        return None

    def last_view(self) -> tuple[str, ...] | None:
        """Members of the last regular view this log reports installed."""
        for r in reversed(self.records):
            if r.get("msg") == "view installed" and not r.get("transitional"):
                return tuple(sorted(r.get("members", ())))
        return None


@contextlib.contextmanager
def watching(log_dir: Path, nodes: Iterable[str]) -> Iterator[dict[str, LogWatch]]:
    """A LogWatch on ``<log_dir>/<node>.log`` of each node, closed at the end."""
    logs = {n: LogWatch(log_dir / f"{n}.log") for n in nodes}
    try:
        yield logs
    finally:
        for w in logs.values():
            w.close()


def wait_all(
    logs: Mapping[str, LogWatch], pred: Callable[[], bool], timeout: float, what: str
) -> None:
    """Until ``pred()`` holds over everything the ``logs`` hold (each re-read whenever a
    log changes); fail after ``timeout`` s. For a condition across nodes, such as all
    of them reporting the same last view."""
    deadline = time.monotonic() + timeout
    while True:
        for w in logs.values():
            w.refresh()
        if pred():
            return
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"{what}: not seen within {timeout}s")
        ready, _, _ = select.select(list(logs.values()), [], [], left)
        for w in ready:
            w.drain()
