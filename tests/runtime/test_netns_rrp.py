"""Totem's redundant ring on real processes: three hosts in network namespaces, each
with two links (one a network, on two bridges), one link taken down mid-run and
brought back (issue 27).

As in ``test_netns.py`` the test builds its own namespaces (a "switch" namespace with
one bridge a network, one namespace a host with a veth pair into each bridge) and
deletes them at the end; nothing touches the machine's own namespace. The nodes run as
``ringcast node`` processes; their status endpoints are read from inside their
namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config, render_config

from .conftest import LogWatch

IP = shutil.which("ip")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or IP is None,
    reason="needs root and iproute2 (`ip`) to create network namespaces",
)

HOSTS = ["n1", "n2", "n3"]
SUBNETS = ["10.213.81", "10.213.82"]
PORT = 5405
STATUS_PORT = 8405


def _ip(*args: str) -> None:
    assert IP is not None
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def two_bridges() -> Iterator[dict[str, str]]:
    """Namespaces ``{node: netns}``, each host on both bridges; removed afterwards."""
    tag = uuid.uuid4().hex[:6]
    sw = f"rcsw2-{tag}"
    spaces = {n: f"rc2{n}-{tag}" for n in HOSTS}
    made: list[str] = []
    try:
        try:
            _ip("netns", "add", sw)
        except subprocess.CalledProcessError as e:
            pytest.skip(f"cannot create network namespaces here: {e.stderr.decode().strip()}")
        made.append(sw)
        for net in range(len(SUBNETS)):
            _ip("-n", sw, "link", "add", f"br{net}", "type", "bridge")
            _ip("-n", sw, "link", "set", f"br{net}", "up")
        for k, ns in enumerate(spaces.values(), start=1):
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            for net, subnet in enumerate(SUBNETS):
                peer = f"p{k}n{net}"
                _ip("-n", ns, "link", "add", f"eth{net}", "type", "veth", "peer", "name", peer)
                _ip("-n", ns, "link", "set", peer, "netns", sw)
                _ip("-n", sw, "link", "set", peer, "master", f"br{net}")
                _ip("-n", sw, "link", "set", peer, "up")
                _ip("-n", ns, "addr", "add", f"{subnet}.{k}/24", "dev", f"eth{net}")
                _ip("-n", ns, "link", "set", f"eth{net}", "up")
        yield spaces
    finally:
        for ns in reversed(made):
            subprocess.run([IP or "ip", "netns", "del", ns], capture_output=True, timeout=10)


def _in(ns: str) -> list[str]:
    """The ``ringcast`` command inside namespace ``ns``."""
    return [IP or "ip", "netns", "exec", ns, sys.executable, "-m", "ringcast.cli.main"]


_FETCH = (
    "import asyncio, sys\n"
    "from ringcast.runtime.status import fetch_status\n"
    "print(asyncio.run(fetch_status(('127.0.0.1', int(sys.argv[1])), sys.argv[2], 30)))\n"
)


def _status(ns: str, port: int, query: str = "") -> dict[str, Any]:
    """The node's ``/status`` (a long poll when ``query`` has a condition)."""
    path = "/status" + (f"?{query}" if query else "")
    out = subprocess.run(
        [IP or "ip", "netns", "exec", ns, sys.executable, "-c", _FETCH, str(port), path],
        check=True,
        capture_output=True,
        timeout=40,
    )
    return json.loads(out.stdout)


def _until(
    ns: str, port: int, pred: Callable[[dict[str, Any]], bool], timeout: float, what: str
) -> dict[str, Any]:
    """Read the status until ``pred`` holds (each read is a process start, ~0.3 s)."""
    deadline = time.monotonic() + timeout
    while True:
        st = _status(ns, port)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s; last status {st['state']}")


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_one_link_down_then_up_no_view_change(
    tmp_path: Path, two_bridges: dict[str, str], mode: str
) -> None:
    path = write_cluster(tmp_path, nodes=3, protocol="totem", trace_format="jsonl")
    cfg0 = load_config(path)
    nodes = [
        (n, [f"{s}.{k}:{PORT}" for s in SUBNETS], f"127.0.0.1:{STATUS_PORT + k}")
        for k, n in enumerate(HOSTS, start=1)
    ]
    path.write_text(
        render_config(
            name="netns-rrp",
            protocol="totem",
            nodes=nodes,
            # timeouts for a loaded 2-core test machine (three Python processes and
            # everyone else's work): a slow scheduler must not pass for a failure
            settings={
                "rrp_mode": mode,
                "token_timeout": "3s",
                "token_retransmit_timeout": "300ms",
                "consensus_timeout": "3600ms",
                "rrp_token_expired_timeout": "300ms",
            },
            trace_format="jsonl",
            run_id=cfg0.run_id,
            origin_ns=cfg0.origin_ns,
            trace_rotate="200ms",
        )
    )
    port = {n: STATUS_PORT + k for k, n in enumerate(HOSTS, start=1)}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs = {n: LogWatch(tmp_path / f"{n}.log") for n in HOSTS}
    try:
        for n, ns in two_bridges.items():
            log = open(tmp_path / f"{n}.log", "wb")  # noqa: SIM115
            procs[n] = subprocess.Popen(
                [*_in(ns), "node", "--config", str(path), "--id", n, "--rate", "50"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
        everyone = ",".join(HOSTS)
        before = {}
        for n in HOSTS:
            logs[n].wait_ready(0, 30)
            st = _status(two_bridges[n], port[n], f"members={everyone}&wait=30")
            assert st["condition_met"], f"{n}: no view of every node: {st['view']}"
            assert st["state"]["rrp_net0"] == st["state"]["rrp_net1"] == "healthy"
            before[n] = st
        ns3 = two_bridges["n3"]
        _ip("-n", ns3, "link", "set", "eth1", "down")
        st = _until(ns3, port["n3"], lambda s: s["state"]["rrp_net1"] == "faulty", 30, "faulty")
        assert st["state"]["rrp_net0"] == "healthy"
        # deliveries go on over network 0 alone, in the same configuration
        d = _status(ns3, port["n3"])["metrics"]["delivered"]
        st = _status(ns3, port["n3"], f"delivered={d + 300}&wait=30")
        assert st["condition_met"], "deliveries stopped with one network down"
        table = subprocess.run(
            [*_in(ns3), "status", "--config", str(path)],
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout.decode()
        assert "net1 faulty" in table
        _ip("-n", ns3, "link", "set", "eth1", "up")
        _until(ns3, port["n3"], lambda s: s["state"]["rrp_net1"] == "healthy", 30, "healthy")
        for n in HOSTS:
            st = _status(two_bridges[n], port[n])
            assert st["view"] == before[n]["view"], f"{n} changed configuration"
            assert st["metrics"]["views"] == before[n]["metrics"]["views"]
            assert st["state"]["rrp_net1"] == "healthy"
            assert st["metrics"]["delivered"] > before[n]["metrics"]["delivered"]
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for n, p in procs.items():
            assert p.wait(20) == 0, f"{n} exited with {p.returncode}"
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for w in logs.values():
            w.close()
