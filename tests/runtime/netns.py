"""Network-namespace labs and ``ringcast node`` processes for the real-network tests and
benches (not a test module).

The labs themselves (one namespace a host on one bridge a network) are the product's,
:mod:`ringcast.live.netns`, re-exported here; this module adds the tests' cluster files,
node processes and waits.

Nothing here calls pytest at run time: a lab that cannot be built raises
``NetnsUnavailable`` and a failed wait raises ``AssertionError``; the fixtures
(``tests/runtime/conftest.py``) turn the former into a skip. ``requires_netns`` is the
mark for test modules that need namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from ringcast.live.netns import (
    IP,
    NFT,
    Lab,
    NetnsUnavailable,
    ip,
    lab,
    ringcast_in,
)
from ringcast.runtime.cluster import spawn_node, write_cluster
from ringcast.runtime.config import load_config, render_config

if TYPE_CHECKING:
    from .conftest import LogWatch

__all__ = [
    "IP",
    "NFT",
    "Lab",
    "NetnsUnavailable",
    "Nodes",
    "await_views",
    "full_view",
    "ip",
    "lab",
    "lab_cluster",
    "requires_netns",
    "ringcast_in",
    "status",
    "status_until",
]

requires_netns = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and iproute2 (`ip`) to create network namespaces",
)


def lab_cluster(
    directory: Path,
    the_lab: Lab,
    protocol: str,
    *,
    name: str,
    port: int = 5405,
    status_port: int | None = None,
    settings: Mapping[str, Any] | None = None,
    trace_rotate: str = "200ms",
) -> Path:
    """Write a cluster file (and key) in ``directory`` for the lab's hosts: node k at
    ``<subnet>.<k>:port`` on every network, its status endpoint (if ``status_port``) at
    ``127.0.0.1:<status_port + k>`` inside its namespace; JSON-lines traces."""
    path = write_cluster(
        directory, nodes=len(the_lab.hosts), protocol=protocol, trace_format="jsonl"
    )
    cfg0 = load_config(path)
    nodes = [
        (
            n,
            [f"{s}.{k}:{port}" for s in the_lab.subnets],
            None if status_port is None else f"127.0.0.1:{status_port + k}",
        )
        for k, n in enumerate(the_lab.hosts, start=1)
    ]
    path.write_text(
        render_config(
            name=name,
            protocol=protocol,
            nodes=nodes,
            settings=settings,
            trace_format="jsonl",
            run_id=cfg0.run_id,
            origin_ns=cfg0.origin_ns,
            trace_rotate=trace_rotate,
        )
    )
    return path


class Nodes:
    """The ``ringcast node`` processes of one cluster file, each in its namespace of
    ``spaces`` (loopback for a node not in it), logging to ``<log_dir>/<node>.log``.

    Used as a context manager: whatever still runs at the end is killed, so a failed
    test leaves no process behind; ``stop()`` is the orderly end of the happy path.
    """

    def __init__(self, config: Path, log_dir: Path, spaces: Mapping[str, str] | None = None):
        self.config = config
        self.log_dir = log_dir
        self.spaces = dict(spaces or {})
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, node: str, extra: Sequence[str] = ()) -> subprocess.Popen[bytes]:
        """Start (or restart) ``node`` with ``extra`` arguments."""
        ns = self.spaces.get(node)
        if ns is None:
            p = spawn_node(self.config, node, self.log_dir, list(extra))
        else:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            cmd = [*ringcast_in(ns), "node", "--config", str(self.config), "--id", node, *extra]
            with open(self.log_dir / f"{node}.log", "ab") as log:
                p = subprocess.Popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
        self.procs[node] = p
        return p

    def start_all(self, extra: Sequence[str] = ()) -> None:
        """Start every node of ``spaces``."""
        for n in self.spaces:
            self.start(n, extra)

    def stop(
        self, timeout: float = 20, *, check: bool = True, nodes: Sequence[str] | None = None
    ) -> None:
        """SIGTERM to every node (or to ``nodes``), then wait ``timeout`` s for each.
        ``check``: each must exit with 0 (else AssertionError); otherwise one that does
        not end is killed."""
        procs = {n: self.procs[n] for n in (self.procs if nodes is None else nodes)}
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for n, p in procs.items():
            if check:
                assert p.wait(timeout) == 0, f"{n} exited with {p.returncode}"
            else:
                try:
                    p.wait(timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def pause(self, node: str) -> None:
        """SIGSTOP ``node``: it stops where it is (a long GC pause, a frozen VM)."""
        self.procs[node].send_signal(signal.SIGSTOP)

    def resume(self, node: str) -> None:
        """SIGCONT ``node`` (harmless if it runs)."""
        p = self.procs[node]
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)

    def kill(self, node: str) -> None:
        """kill -9 ``node`` and reap it."""
        p = self.procs[node]
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def __enter__(self) -> Nodes:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def await_views(
    logs: Mapping[str, LogWatch], want: Mapping[str, set[str]], timeout: float, what: str
) -> None:
    """Until each node in ``want`` logs a regular view of exactly those members."""
    for n, members in want.items():
        logs[n].wait_for(
            lambda _recs, w=logs[n], m=members: set(w.last_view() or ()) == m,
            timeout,
            f"{what}: a view of {sorted(members)} at {n}",
        )


def full_view(
    the_lab: Lab, logs: Mapping[str, LogWatch], port: Mapping[str, int]
) -> dict[str, dict[str, Any]]:
    """Each lab node's status (read at ``port[node]`` inside its namespace) once it is
    ready and has a view of every node of the lab."""
    everyone = ",".join(the_lab.hosts)
    before = {}
    for n, ns in the_lab.hosts.items():
        logs[n].wait_ready(0, 30)
        st = status(ns, port[n], f"members={everyone}&wait=30")
        assert st["condition_met"], f"{n}: no view of every node: {st['view']}"
        before[n] = st
    return before


_FETCH = (
    "import asyncio, sys\n"
    "from ringcast.runtime.status import fetch_status\n"
    "print(asyncio.run(fetch_status(('127.0.0.1', int(sys.argv[1])), sys.argv[2], 30)))\n"
)


def status(ns: str, port: int, query: str = "") -> dict[str, Any]:
    """The ``/status`` of the node listening on ``port`` in namespace ``ns`` (a long poll
    when ``query`` has a condition), read by a process started inside ``ns``."""
    path = "/status" + (f"?{query}" if query else "")
    out = subprocess.run(
        [IP, "netns", "exec", ns, sys.executable, "-c", _FETCH, str(port), path],
        check=True,
        capture_output=True,
        timeout=40,
    )
    return json.loads(out.stdout)


def status_until(
    ns: str, port: int, pred: Callable[[dict[str, Any]], bool], timeout: float, what: str
) -> dict[str, Any]:
    """Read the status until ``pred`` holds (each read is a process start, ~0.3 s)."""
    deadline = time.monotonic() + timeout
    while True:
        st = status(ns, port)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s; last status {st['state']}")
