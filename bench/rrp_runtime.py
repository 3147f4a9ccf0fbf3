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

``--lossy``: network 1 loses 30% instead of failing. The kernel here has no ``netem``
qdisc (``CONFIG_NET_SCH_NETEM`` is not set: ``tc qdisc add dev X root netem loss 30%``
answers "Specified qdisc kind is unknown"), so the loss is an nftables rule in the
switch namespace, ``numgen random mod 100 < 30 drop`` on IPv4 frames entering bridge 1
(the same drop for every datagram on network 1, as the simulator's
``loss_per_network``). Every node multicasts at ``--rate`` a second (paced, so that
latency is the ring's, not a full queue's). Per style, one JSON line:

- ``healthy_msgs_s`` / ``lossy_msgs_s``: deliveries a second at node 1, both networks
  clean, then network 1 lossy (from 3 s after the loss began);
- ``healthy_p50_ms`` / ``healthy_p99_ms``, ``lossy_p50_ms`` / ``lossy_p99_ms``: latency of
  the messages each node submitted in the window, submit to its own delivery (traces);
- ``lost``: messages submitted before the loss was lifted that some node never
  delivered (traces of all nodes, read after the nodes stopped);
- ``faulty_marks``: ``network_faulty`` rows of network 1 at all nodes (and ``net0_blamed``
  of network 0, which must stay 0); ``views`` as above.

    sudo python bench/rrp_runtime.py [--seconds 5] [--mode active --mode passive ...]
    sudo python bench/rrp_runtime.py --lossy [--rate 300] [--seconds 5]

Needs root, iproute2, and for ``--lossy`` nftables (``apt-get install nftables``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.runtime.netns import Lab, Nodes, lab, lab_cluster, status

from ringcast.runtime.config import load_config

LOSS_PERCENT = 30
HOSTS = ["n1", "n2", "n3"]
SUBNETS = ["10.213.91", "10.213.92"]
STATUS = 8505
TIMEOUTS = {
    "token_timeout": "1000ms",
    "token_retransmit_timeout": "238ms",
    "consensus_timeout": "1200ms",
    "join_timeout": "50ms",
}


def rate_of(ns: str, port: int, seconds: float) -> float:
    a = status(ns, port)
    t0 = time.monotonic()
    time.sleep(seconds)  # a measurement window, not a wait for a condition
    b = status(ns, port)
    return (b["metrics"]["delivered"] - a["metrics"]["delivered"]) / (time.monotonic() - t0)


def marks(work: Path, node: str, network: int | None = 1) -> list[tuple[int, str, int]]:
    """(t, action, network) of the node's fault rows of ``network`` (None: any) from its
    runtime trace."""
    out = []
    for f in sorted((work / "trace").glob(f"{node}.*.jsonl")):
        for line in f.read_text().splitlines():
            if '"fault"' not in line:
                continue
            r = json.loads(line)
            d = r.get("detail") or {}
            if isinstance(d, str):
                d = json.loads(d)
            net = d.get("network")
            if r.get("kind") == "fault" and isinstance(net, int) and network in (None, net):
                out.append((r["t"], d.get("action", ""), net))
    return sorted(out)


_ROW = re.compile(r'"node":"([^"]+)","t":(\d+),.*?"kind":"(submit|deliver)","msg":"([^"]+)"')


def load_rows(work: Path) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Submit times by message, and delivery times by node and message (traces)."""
    submits: dict[str, int] = {}
    delivers: dict[str, dict[str, int]] = {n: {} for n in HOSTS}
    for f in sorted((work / "trace").glob("*.jsonl")):
        with f.open() as fh:
            for line in fh:
                m = _ROW.search(line)
                if m is None:
                    continue
                node, t, kind, msg = m.group(1), int(m.group(2)), m.group(3), m.group(4)
                if kind == "submit":
                    submits[msg] = t
                else:
                    delivers[node].setdefault(msg, t)
    return submits, delivers


def latency(
    submits: dict[str, int], delivers: dict[str, dict[str, int]], t0: int, t1: int
) -> tuple[float | None, float | None]:
    """p50 and p99 (ms) of the messages submitted in [t0, t1), to their sender's delivery."""
    lat = sorted(
        delivers[msg.split(":")[0]][msg] - t
        for msg, t in submits.items()
        if t0 <= t < t1 and msg in delivers.get(msg.split(":")[0], {})
    )
    if not lat:
        return None, None
    return lat[len(lat) // 2] / 1e6, lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1e6


def cluster(mode: str, work: Path, the_lab: Lab) -> Path:
    """The cluster file (in ``work``) of the lab's three hosts, ``rrp_mode = mode``."""
    return lab_cluster(
        work,
        the_lab,
        "totem",
        name="rrp-bench",
        status_port=STATUS,
        settings={"rrp_mode": mode, **TIMEOUTS},
        trace_rotate="500ms",
    )


def start(the_lab: Lab, nodes: Nodes, rate: float) -> Any:
    """Start the three node processes; return their config once they share a full view."""
    nodes.start_all(["--rate", str(rate)])
    deadline = time.monotonic() + 60
    while True:
        try:
            st = status(the_lab.hosts["n1"], STATUS + 1, "members=n1,n2,n3&wait=30")
            if st.get("condition_met"):
                return load_config(nodes.config)
        except subprocess.CalledProcessError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise RuntimeError("no full view")


def one_lossy(mode: str, seconds: float, work: Path, rate: float) -> dict[str, Any]:
    with lab(HOSTS, SUBNETS, prefix="rcb") as the_lab:
        nodes = Nodes(cluster(mode, work, the_lab), work / "logs", the_lab.hosts)
        with nodes:  # whatever still runs at the end is killed
            cfg0 = start(the_lab, nodes, rate)
            n1, p1 = the_lab.hosts["n1"], STATUS + 1

            def now() -> int:
                return time.time_ns() - cfg0.origin_ns

            time.sleep(2)  # warm-up
            w0 = now()
            healthy = rate_of(n1, p1, seconds)
            w1 = now()
            views0 = status(n1, p1)["metrics"]["views"]
            t_loss = now()
            the_lab.lossy(1, LOSS_PERCENT)
            time.sleep(3)  # detection, if any; then the window
            w2 = now()
            degraded = rate_of(n1, p1, seconds)
            w3 = now()
            the_lab.lossy(1, None)
            time.sleep(5)  # re-admission, and every message submitted so far delivered
            views = status(n1, p1)["metrics"]["views"] - views0
            nodes.stop(check=False)  # SIGTERM: the nodes write out their traces

    submits, delivers = load_rows(work)
    before = [m for m, t in submits.items() if t < w3]
    lost = sum(1 for m in before for n in HOSTS if m not in delivers[n])
    h50, h99 = latency(submits, delivers, w0, w1)
    l50, l99 = latency(submits, delivers, w2, w3)
    marks_all = [(n, mark) for n in HOSTS for mark in marks(work, n, network=None)]
    faulty = [(n, t, k) for n, (t, a, k) in marks_all if a == "network_faulty"]
    return {
        "system": "ringcast",
        "rrp_mode": mode,
        "rate_per_node": rate,
        "healthy_msgs_s": round(healthy),
        "lossy_msgs_s": round(degraded),
        "healthy_p50_ms": None if h50 is None else round(h50, 2),
        "healthy_p99_ms": None if h99 is None else round(h99, 2),
        "lossy_p50_ms": None if l50 is None else round(l50, 2),
        "lossy_p99_ms": None if l99 is None else round(l99, 2),
        "messages": len(before),
        "lost": lost,
        "faulty_marks": sum(1 for _, t, k in faulty if k == 1 and t >= t_loss),
        "first_faulty_ms": min(
            ((t - t_loss) // 1_000_000 for _, t, k in faulty if k == 1 and t >= t_loss),
            default=None,
        ),
        "net0_blamed": sum(1 for _, _, k in faulty if k == 0),
        "views": views,
    }


def first_after(rows: list[tuple[int, str, int]], t0: int, action: str) -> float | None:
    ts = [t for t, a, _ in rows if a == action and t >= t0]
    return (min(ts) - t0) / 1e6 if ts else None


def one(mode: str, seconds: float, work: Path) -> dict[str, Any]:
    with lab(HOSTS, SUBNETS, prefix="rcb") as the_lab:
        nodes = Nodes(cluster(mode, work, the_lab), work / "logs", the_lab.hosts)
        with nodes:  # whatever still runs at the end is killed
            cfg0 = start(the_lab, nodes, 0)
            n1, p1 = the_lab.hosts["n1"], STATUS + 1
            time.sleep(2)  # warm-up
            before = rate_of(n1, p1, seconds)
            views0 = status(n1, p1)["metrics"]["views"]
            t_down = time.time_ns() - cfg0.origin_ns
            the_lab.link("n3", 1, "down")
            time.sleep(3)  # detection (read from the trace afterwards), then the window
            after = rate_of(n1, p1, seconds)
            t_up = time.time_ns() - cfg0.origin_ns
            the_lab.link("n3", 1, "up")
            time.sleep(5)  # re-admission: a probe a second
            views = status(n1, p1)["metrics"]["views"] - views0
            nodes.stop(check=False)  # SIGTERM: the nodes write out their traces

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
    ap.add_argument("--lossy", action="store_true", help="network 1 loses 30%% (nftables)")
    ap.add_argument("--rate", type=float, default=300.0, help="--lossy: messages/s a node")
    a = ap.parse_args()
    if a.lossy and shutil.which("nft") is None:
        sys.exit("--lossy needs nftables' nft (apt-get install nftables)")
    with tempfile.TemporaryDirectory() as tmp:
        d = a.keep or Path(tmp)
        for mode in a.mode or ["none", "active", "passive"]:
            work = d / (f"{mode}-lossy" if a.lossy else mode)
            work.mkdir(parents=True)
            row = (
                one_lossy(mode, a.seconds, work, a.rate) if a.lossy else one(mode, a.seconds, work)
            )
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
