"""Three hosts in network namespaces on a bridge: a real link-down partition, then heal.

The test builds its own namespaces: one "switch" namespace holding a bridge, and one
namespace a host with a veth pair into the switch. Nothing is added to the test
machine's own network namespace, and everything is deleted at the end. The nodes
run as ``ringcast node`` processes inside the host namespaces; the test follows
their views through their logs ("view installed" records, read as they are written).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config, render_config

from .conftest import PROTOCOLS, LogWatch

IP = shutil.which("ip")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or IP is None,
    reason="needs root and iproute2 (`ip`) to create network namespaces",
)

HOSTS = ["n1", "n2", "n3"]
SUBNET = "10.213.77"
PORT = 5405


def _ip(*args: str) -> None:
    assert IP is not None
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def bridge_lab() -> Iterator[dict[str, str]]:
    """Namespaces ``{node: netns}`` on one bridge; removed afterwards."""
    tag = uuid.uuid4().hex[:6]
    sw = f"rcsw-{tag}"
    spaces = {n: f"rc{n}-{tag}" for n in HOSTS}
    made: list[str] = []
    try:
        try:
            _ip("netns", "add", sw)
        except subprocess.CalledProcessError as e:
            pytest.skip(f"cannot create network namespaces here: {e.stderr.decode().strip()}")
        made.append(sw)
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        for k, (_node, ns) in enumerate(spaces.items(), start=1):
            _ip("netns", "add", ns)
            made.append(ns)
            _ip(
                "-n",
                ns,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                f"p{k}",
                "netns",
                sw,
            )
            _ip("-n", sw, "link", "set", f"p{k}", "master", "br0")
            _ip("-n", sw, "link", "set", f"p{k}", "up")
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{k}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield spaces
    finally:
        for ns in reversed(made):
            subprocess.run([IP or "ip", "netns", "del", ns], capture_output=True, timeout=10)


def _await(logs: dict[str, LogWatch], want: dict[str, set[str]], timeout: float, what: str) -> None:
    """Until each node in ``want`` logs a regular view of exactly those members."""
    for n, members in want.items():
        logs[n].wait_for(
            lambda _recs, w=logs[n], m=members: set(w.last_view() or ()) == m,
            timeout,
            f"{what}: a view of {sorted(members)} at {n}",
        )


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p in ("basic", "totem", "gms")])
def test_link_down_partition_then_heal(
    tmp_path: Path, bridge_lab: dict[str, str], protocol: str
) -> None:
    path = write_cluster(tmp_path, nodes=3, protocol=protocol, trace_format="jsonl")
    cfg0 = load_config(path)
    nodes = [(n, [f"{SUBNET}.{k}:{PORT}"], None) for k, n in enumerate(HOSTS, start=1)]
    path.write_text(
        render_config(
            name="netns",
            protocol=protocol,
            nodes=nodes,
            trace_format="jsonl",
            run_id=cfg0.run_id,
            origin_ns=cfg0.origin_ns,
            trace_rotate="200ms",
        )
    )
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs = {n: LogWatch(tmp_path / f"{n}.log") for n in HOSTS}
    try:
        for n, ns in bridge_lab.items():
            log = open(tmp_path / f"{n}.log", "wb")  # noqa: SIM115
            procs[n] = subprocess.Popen(
                [
                    IP or "ip",
                    "netns",
                    "exec",
                    ns,
                    sys.executable,
                    "-m",
                    "ringcast.cli.main",
                    "node",
                    "--config",
                    str(path),
                    "--id",
                    n,
                    "--rate",
                    "50",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
        everyone = set(HOSTS)
        _await(logs, dict.fromkeys(HOSTS, everyone), 30, "initial view")
        _ip("-n", bridge_lab["n3"], "link", "set", "eth0", "down")
        _await(logs, {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}}, 30, "partition view")
        _ip("-n", bridge_lab["n3"], "link", "set", "eth0", "up")
        _await(logs, dict.fromkeys(HOSTS, everyone), 30, "healed view")
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
