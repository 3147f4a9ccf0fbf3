"""Totem's redundant ring in the simulator: throughput, latency and cost per replication
style with two networks, healthy, with one network failed, and with one 30% lossy,
against the single ring (one network) in the same run.

Four nodes multicast 100-byte agreed messages at ``--rate`` a node (enough to keep the
ring's flow-control window full), latency uniform 100-400 us a hop. Per configuration:
deliveries a simulated second per node, latency of a node's own messages from submit
to its own delivery (p50 / p99, simulated ms), datagrams put on the networks per
delivered message (the bandwidth cost), configurations installed after the first, and
when the failed or lossy network was marked faulty. The simulator models latency and
loss, not bandwidth: a style's bandwidth cost shows as datagrams, not as a limit.

    python bench/rrp_sim.py [--seconds 3] [--rate 2000] [--seeds 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ringcast.sim import Simulation, parse_scenario

NODES = ["A", "B", "C", "D"]
CONDITIONS = ("healthy", "one failed", "30% lossy")
MODES = ("single ring", "active", "passive")


def scenario(mode: str, condition: str, seconds: float, rate: float) -> dict[str, Any]:
    ms = int(seconds * 1000)
    doc: dict[str, Any] = {
        "name": f"rrp_bench_{mode}_{condition}".replace(" ", "_").replace("%", ""),
        "protocol": "totem",
        "nodes": NODES,
        "duration": f"{ms}ms",
        "network": {
            "networks": 1 if mode == "single ring" else 2,
            "latency": {"dist": "uniform", "low": "100us", "high": "400us"},
        },
        "workload": [
            {
                "nodes": "all",
                "rate": rate,
                "size": 100,
                "order": "agreed",
                "start": "50ms",
                "duration": f"{ms - 250}ms",
            }
        ],
    }
    if mode != "single ring":
        doc["settings"] = {"rrp_mode": mode}
        if condition == "one failed":
            doc["nemesis"] = [
                {"at": "500ms", "action": "link_down", "node": n, "network": 1} for n in NODES
            ]
        elif condition == "30% lossy":
            doc["network"]["loss_per_network"] = [0.0, 0.3]
    return doc


def measure(doc: dict[str, Any], seed: int) -> dict[str, float]:
    res = Simulation(parse_scenario(doc), seed=seed).run()
    submitted = {r["msg"]: r["t"] for r in res.events(kind="submit")}
    lat = []
    delivered = 0
    window_ns = (int(doc["duration"][:-2]) - 1000) * 1_000_000  # from 0.5 s to end - 0.5 s
    for n in NODES:
        for r in res.events(kind="deliver", node=n):
            if 500_000_000 <= r["t"] < 500_000_000 + window_ns:
                delivered += 1
                if r["msg"].split(":")[0] == n and r["msg"] in submitted:
                    lat.append((r["t"] - submitted[r["msg"]]) / 1e6)
    lat.sort()
    faulty = [
        r["t"] for r in res.events(kind="fault") if r["detail"].get("action") == "network_faulty"
    ]
    views = sum(v - 2 for v in res.summary["views_installed"].values())  # first ring: 2 each
    return {
        "msgs_s": delivered / len(NODES) / (window_ns / 1e9),
        "p50": lat[len(lat) // 2] if lat else float("nan"),
        "p99": lat[int(len(lat) * 0.99)] if lat else float("nan"),
        "dgrams": res.summary["messages_sent"] / max(1, res.summary["deliveries"] / len(NODES)),
        "views": views,
        "faulty_ms": (max(faulty) / 1e6) if faulty else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rate", type=float, default=2000.0)
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"{'style':12} {'condition':11} {'msgs/s/node':>11} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'dgrams/msg':>10} {'views+':>6} {'faulty at ms':>12}"
    )
    for cond in CONDITIONS:
        for mode in MODES:
            if mode == "single ring" and cond != "healthy":
                continue
            runs = [
                measure(scenario(mode, cond, a.seconds, a.rate), s) for s in range(1, a.seeds + 1)
            ]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"{mode:12} {cond:11} {med['msgs_s']:11,.0f} {med['p50']:7.2f} {med['p99']:7.2f} "
                f"{med['dgrams']:10.2f} {med['views']:6.0f} {med['faulty_ms']:12.0f}"
            )
    print(f"# {time.perf_counter() - t0:.0f} s wall")


if __name__ == "__main__":
    main()
