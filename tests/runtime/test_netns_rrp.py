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

import contextlib
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
NFT = shutil.which("nft")
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


@contextlib.contextmanager
def _bridges() -> Iterator[tuple[str, dict[str, str]]]:
    """The switch namespace and ``{node: netns}``, each host on both bridges (the
    bridge ports of host k are ``p<k>n<net>``); removed afterwards."""
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
        yield sw, spaces
    finally:
        for ns in reversed(made):
            subprocess.run([IP or "ip", "netns", "del", ns], capture_output=True, timeout=10)


@pytest.fixture
def two_bridges() -> Iterator[dict[str, str]]:
    """Namespaces ``{node: netns}``, each host on both bridges; removed afterwards."""
    with _bridges() as (_, spaces):
        yield spaces


@pytest.fixture
def switch_and_hosts() -> Iterator[tuple[str, dict[str, str]]]:
    with _bridges() as lab:
        yield lab


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


def _cluster(tmp_path: Path, mode: str) -> Path:
    """A three-node Totem cluster on both bridges with ``rrp_mode = mode``."""
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
    return path


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_one_link_down_then_up_no_view_change(
    tmp_path: Path, two_bridges: dict[str, str], mode: str
) -> None:
    path = _cluster(tmp_path, mode)
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


def _lossy(sw: str, percent: int | None) -> None:
    """Drop ``percent``% of the IPv4 frames entering bridge 1 (network 1); None: stop.
    (An nftables rule: this kernel has no netem qdisc.)"""
    assert IP is not None and NFT is not None
    if percent is None:
        cmd = [IP, "netns", "exec", sw, NFT, "delete", "table", "bridge", "rcloss"]
        subprocess.run(cmd, check=True, capture_output=True, timeout=10)
        return
    ports = ", ".join(f'"p{k}n1"' for k in range(1, len(HOSTS) + 1))
    rules = (
        "table bridge rcloss {\n chain lossy {\n"
        "  type filter hook forward priority 0; policy accept;\n"
        f"  iifname {{ {ports} }} ether type ip numgen random mod 100 < {percent} drop\n"
        " }\n}\n"
    )
    try:
        subprocess.run(
            [IP, "netns", "exec", sw, NFT, "-f", "-"],
            input=rules.encode(),
            check=True,
            capture_output=True,
            timeout=10,
        )
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot add an nftables drop rule here: {e.stderr.decode().strip()}")


def _rows(tmp_path: Path, node: str) -> list[dict[str, Any]]:
    """The node's trace rows in order (read after it stopped)."""
    rows = []
    for f in (tmp_path / "trace").glob(f"{node}.*.jsonl"):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line]
    rows.sort(key=lambda r: r["i"])
    for r in rows:
        if isinstance(r.get("detail"), str):
            r["detail"] = json.loads(r["detail"])
    return rows


@pytest.mark.skipif(NFT is None, reason="needs nftables (`nft`) to make a network lossy")
@pytest.mark.parametrize("mode", ["active", "passive"])
def test_one_network_30_percent_lossy_no_view_change_no_message_lost(
    tmp_path: Path, switch_and_hosts: tuple[str, dict[str, str]], mode: str
) -> None:
    sw, spaces = switch_and_hosts
    path = _cluster(tmp_path, mode)
    port = {n: STATUS_PORT + k for k, n in enumerate(HOSTS, start=1)}
    count = 400  # messages a node, at 50 a second
    load = ["--rate", "50", "--count", str(count)]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs = {n: LogWatch(tmp_path / f"{n}.log") for n in HOSTS}
    try:
        for n, ns in spaces.items():
            log = open(tmp_path / f"{n}.log", "wb")  # noqa: SIM115
            procs[n] = subprocess.Popen(
                [*_in(ns), "node", "--config", str(path), "--id", n, *load],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
        everyone = ",".join(HOSTS)
        before = {}
        for n in HOSTS:
            logs[n].wait_ready(0, 30)
            st = _status(spaces[n], port[n], f"members={everyone}&wait=30")
            assert st["condition_met"], f"{n}: no view of every node: {st['view']}"
            before[n] = st
        full_view = before["n1"]["view"]["id"]
        _lossy(sw, 30)
        # network 1 loses 30% while the nodes send the rest of their load
        for n in HOSTS:
            _until(spaces[n], port[n], lambda s: s["metrics"]["submitted"] >= count, 60, "load")
        _lossy(sw, None)
        # every node's deliveries have stopped: three reads in a row alike
        for n in HOSTS:
            seen: list[int] = []

            def settled(s: dict[str, Any], seen: list[int] = seen) -> bool:
                seen.append(s["metrics"]["delivered"])
                return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]

            _until(spaces[n], port[n], settled, 60, "deliveries settled")
        for n in HOSTS:
            st = _status(spaces[n], port[n])
            assert st["view"] == before[n]["view"], f"{n} changed configuration"
            assert st["metrics"]["views"] == before[n]["metrics"]["views"]
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
    # No message lost: every message submitted in the full view, at any node, was
    # delivered in it at every node (the rows between its view row and the next one).
    submitted: set[str] = set()
    delivered: dict[str, set[str]] = {}
    for n in HOSTS:
        rows = _rows(tmp_path, n)
        start = next(
            j for j, r in enumerate(rows) if r["kind"] == "view" and r["view"] == full_view
        )
        end = next((j for j in range(start + 1, len(rows)) if rows[j]["kind"] == "view"), len(rows))
        in_view = rows[start:end]
        submitted |= {r["msg"] for r in in_view if r["kind"] == "submit"}
        delivered[n] = {r["msg"] for r in in_view if r["kind"] == "deliver"}
        # the good network is never blamed
        assert not [
            r
            for r in rows
            if r["kind"] == "fault"
            and r["detail"].get("network") == 0
            and r["detail"].get("action") == "network_faulty"
        ], f"{n} marked network 0 faulty"
    assert len(submitted) > count  # the lossy phase carried most of the load
    for n in HOSTS:
        assert delivered[n] == delivered["n1"], f"{n} delivered another set in the view"
        missing = submitted - delivered[n]
        assert not missing, f"{n} never delivered {len(missing)} of {len(submitted)}"
