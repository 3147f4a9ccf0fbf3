"""Totem's redundant ring on real processes: one of two networks taken down and brought
back under load, per replication style, against the single ring in the same run.

Three ``ringcast node`` processes, each in a network namespace of its own with one link
a network (two bridges in a "switch" namespace), every node multicasting 100-byte agreed
messages as fast as flow control allows (``--rate 0``), ``hmac`` security. Timeouts are
corosync's defaults (token 1000 ms, retransmit 238 ms, consensus 1200 ms, join 50 ms), the
same as ``bench/corosync_knet_links.sh`` gives corosync, so the two compare at equal token
timeout. Per style, printed as one JSON line:

- ``before`` / ``after``: deliveries a second at node 1 over ``--seconds`` with both
  networks, then with network 1 of node 3 down (``ip link set eth1 down``);
- ``down_ms``: from the link going down to node 3 marking network 1 faulty (the
  ``fault`` row of its runtime trace, wall clock shared with this script);
- ``up_ms``: from the link coming back to node 3 re-admitting it (same);
- ``views``: configurations node 1 installed between link down and the end (0: none).

The single ring (``rrp_mode = "none"``, both addresses configured, network 0 only) runs
the same steps on network 0's spare link: its "after" is the single ring unaffected.

    sudo python bench/rrp_runtime.py [--seconds 5] [--mode active --mode passive ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config, render_config

IP = shutil.which("ip") or "ip"
HOSTS = ["n1", "n2", "n3"]
SUBNETS = ["10.213.91", "10.213.92"]
PORT = 5405
STATUS = 8505
TIMEOUTS = {
    "token_timeout": "1000ms",
    "token_retransmit_timeout": "238ms",
    "consensus_timeout": "1200ms",
    "join_timeout": "50ms",
}
FETCH = (
    "import asyncio, sys\n"
    "from ringcast.runtime.status import fetch_status\n"
    "print(asyncio.run(fetch_status(('127.0.0.1', int(sys.argv[1])), sys.argv[2], 30)))\n"
)


def ringcast_in(ns: str) -> list[str]:
    return [IP, "netns", "exec", ns, sys.executable, "-m", "ringcast.cli.main"]


def ip(*args: str) -> None:
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


def lab() -> tuple[str, dict[str, str]]:
    tag = uuid.uuid4().hex[:6]
    sw = f"rcb-sw-{tag}"
    ip("netns", "add", sw)
    for net in range(2):
        ip("-n", sw, "link", "add", f"br{net}", "type", "bridge")
        ip("-n", sw, "link", "set", f"br{net}", "up")
    spaces = {}
    for k, n in enumerate(HOSTS, start=1):
        ns = spaces[n] = f"rcb-{n}-{tag}"
        ip("netns", "add", ns)
        ip("-n", ns, "link", "set", "lo", "up")
        for net, subnet in enumerate(SUBNETS):
            peer = f"q{k}n{net}"
            ip("-n", ns, "link", "add", f"eth{net}", "type", "veth", "peer", "name", peer)
            ip("-n", ns, "link", "set", peer, "netns", sw)
            ip("-n", sw, "link", "set", peer, "master", f"br{net}")
            ip("-n", sw, "link", "set", peer, "up")
            ip("-n", ns, "addr", "add", f"{subnet}.{k}/24", "dev", f"eth{net}")
            ip("-n", ns, "link", "set", f"eth{net}", "up")
    return sw, spaces


def status(ns: str, port: int, query: str = "") -> dict[str, Any]:
    path = "/status" + (f"?{query}" if query else "")
    out = subprocess.run(
        [IP, "netns", "exec", ns, sys.executable, "-c", FETCH, str(port), path],
        check=True,
        capture_output=True,
        timeout=40,
    )
    return json.loads(out.stdout)


def rate(ns: str, port: int, seconds: float) -> float:
    a = status(ns, port)
    t0 = time.monotonic()
    time.sleep(seconds)  # a measurement window, not a wait for a condition
    b = status(ns, port)
    return (b["metrics"]["delivered"] - a["metrics"]["delivered"]) / (time.monotonic() - t0)


def marks(work: Path, node: str) -> list[tuple[int, str]]:
    """(t, action) of the node's network-1 fault rows, from its runtime trace."""
    out = []
    for f in sorted((work / "trace").glob(f"{node}.*.jsonl")):
        for line in f.read_text().splitlines():
            if '"fault"' not in line:
                continue
            r = json.loads(line)
            d = r.get("detail") or {}
            if isinstance(d, str):
                d = json.loads(d)
            if r.get("kind") == "fault" and d.get("network") == 1:
                out.append((r["t"], d.get("action", "")))
    return sorted(out)


def first_after(rows: list[tuple[int, str]], t0: int, action: str) -> float | None:
    ts = [t for t, a in rows if a == action and t >= t0]
    return (min(ts) - t0) / 1e6 if ts else None


def one(mode: str, seconds: float, work: Path) -> dict[str, Any]:
    sw, spaces = lab()
    procs = []
    try:
        path = write_cluster(work, nodes=3, protocol="totem", trace_format="jsonl")
        cfg0 = load_config(path)
        nodes = [
            (n, [f"{s}.{k}:{PORT}" for s in SUBNETS], f"127.0.0.1:{STATUS + k}")
            for k, n in enumerate(HOSTS, start=1)
        ]
        path.write_text(
            render_config(
                name="rrp-bench",
                protocol="totem",
                nodes=nodes,
                settings={"rrp_mode": mode, **TIMEOUTS},
                trace_format="jsonl",
                run_id=cfg0.run_id,
                origin_ns=cfg0.origin_ns,
                trace_rotate="500ms",
            )
        )
        port = {n: STATUS + k for k, n in enumerate(HOSTS, start=1)}
        for n, ns in spaces.items():
            log = open(work / f"{mode}-{n}.log", "wb")  # noqa: SIM115
            procs.append(
                subprocess.Popen(
                    [*ringcast_in(ns), "node", "--config", str(path), "--id", n, "--rate", "0"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )
            log.close()
        n1, n3 = spaces["n1"], spaces["n3"]
        deadline = time.monotonic() + 60
        while True:
            try:
                st = status(n1, port["n1"], "members=n1,n2,n3&wait=30")
                if st.get("condition_met"):
                    break
            except subprocess.CalledProcessError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError("no full view")
        time.sleep(2)  # warm-up
        before = rate(n1, port["n1"], seconds)
        views0 = status(n1, port["n1"])["metrics"]["views"]
        t_down = time.time_ns() - cfg0.origin_ns
        ip("-n", n3, "link", "set", "eth1", "down")
        time.sleep(3)  # detection (read from the trace afterwards), then the window
        after = rate(n1, port["n1"], seconds)
        t_up = time.time_ns() - cfg0.origin_ns
        ip("-n", n3, "link", "set", "eth1", "up")
        time.sleep(5)  # re-admission: a probe a second
        views = status(n1, port["n1"])["metrics"]["views"] - views0
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in [*spaces.values(), sw]:
            subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=10)

    rows = marks(work, "n3")  # the nodes stopped: their traces are complete
    down_ms = first_after(rows, t_down, "network_faulty")
    up_ms = first_after(rows, t_up, "network_healthy")
    return {
        "system": "ringcast",
        "rrp_mode": mode,
        "before_msgs_s": round(before),
        "after_msgs_s": round(after),
        "down_ms": None if down_ms is None else round(down_ms),
        "up_ms": None if up_ms is None else round(up_ms),
        "views": views,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--mode", action="append", default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the nodes' files here")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = a.keep or Path(tmp)
        for mode in a.mode or ["none", "active", "passive"]:
            work = d / mode
            work.mkdir(parents=True)
            print(json.dumps(one(mode, a.seconds, work)), flush=True)


if __name__ == "__main__":
    main()
