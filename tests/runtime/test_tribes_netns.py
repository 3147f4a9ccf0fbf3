"""Tribes across network namespaces: a real partition (a host's link down) splits the
group under two coordinators; when it heals, the two sides merge under one.

Reuses the bridge of namespaces that tests/runtime/test_netns.py builds (and removes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config, render_config
from ringcast.trace import read_trace

from .conftest import LogWatch
from .test_netns import HOSTS, IP, PORT, SUBNET, _ip, bridge_lab, pytestmark  # noqa: F401


def _last_view_id(w: LogWatch) -> str | None:
    for r in reversed(w.records):
        if r.get("msg") == "view installed":
            return str(r.get("view"))
    return None


def _await(logs: dict[str, LogWatch], want: dict[str, set[str]], timeout: float, what: str) -> None:
    for n, members in want.items():
        logs[n].wait_for(
            lambda _recs, w=logs[n], m=members: set(w.last_view() or ()) == m,
            timeout,
            f"{what}: a view of {sorted(members)} at {n}",
        )


def test_partition_heals_under_one_coordinator(
    tmp_path: Path,
    bridge_lab: dict[str, str],  # noqa: F811 - the fixture of test_netns
) -> None:
    path = write_cluster(tmp_path, nodes=3, protocol="tribes", trace_format="jsonl")
    cfg0 = load_config(path)
    nodes = [(n, [f"{SUBNET}.{k}:{PORT}"], None) for k, n in enumerate(HOSTS, start=1)]
    path.write_text(
        render_config(
            name="netns",
            protocol="tribes",
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
                [IP or "ip", "netns", "exec", ns, sys.executable, "-m", "ringcast.cli.main",
                 "node", "--config", str(path), "--id", n, "--rate", "50"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            log.close()
        everyone = set(HOSTS)
        _await(logs, dict.fromkeys(HOSTS, everyone), 30, "initial view")
        _ip("-n", bridge_lab["n3"], "link", "set", "eth0", "down")
        _await(logs, {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}, "n3": {"n3"}}, 30, "partition")
        split = {n: _last_view_id(logs[n]) for n in HOSTS}
        assert split["n1"] == split["n2"] and split["n1"].startswith("n1:")  # type: ignore[union-attr]
        assert split["n3"].startswith("n3:")  # type: ignore[union-attr]
        _ip("-n", bridge_lab["n3"], "link", "set", "eth0", "up")
        _await(logs, dict.fromkeys(HOSTS, everyone), 30, "healed view")
        merged = {_last_view_id(logs[n]) for n in HOSTS}
        assert len(merged) == 1 and next(iter(merged)).startswith("n1:")  # type: ignore[union-attr]
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
    # Every node recorded the merged view with n1 as its leader. (The SIGTERMs above make
    # the nodes leave one by one, so views installed during the shutdown come later.)
    rows = read_trace(tmp_path / "trace").to_pydict()
    leaders: dict[str, set[tuple[str, str]]] = {}
    for node, kind, view, detail in zip(
        rows["node"], rows["kind"], rows["view"], rows["detail"], strict=True
    ):
        if kind == "leader":
            leaders.setdefault(str(node), set()).add((str(view), json.loads(str(detail))["leader"]))
    healed = next(iter(merged))
    assert all((healed, "n1") in leaders.get(n, set()) for n in HOSTS), leaders
