"""Runtime throughput, latency, memory and failover on a loopback cluster of processes.

For 3 and 5 nodes and 100 B and 1 KB messages, every node multicasts in agreed order
as fast as flow control allows. Printed per run: delivered messages a second per
node (mean over nodes, measured between two status samples after a warm-up),
latency of a node's own messages from submit to its own delivery (p50 and p99),
and peak resident memory per node. Then the failover time: ``kill -9`` of one node
to a new view at every survivor, with the protocol's default timeouts, taken from
the survivors' runtime traces.

    python bench/runtime_throughput.py [--protocol totem] [--seconds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ringcast.runtime.cluster import node_ids, spawn_node, write_cluster
from ringcast.runtime.config import load_config
from ringcast.runtime.status import fetch_status
from ringcast.trace import read_trace


async def _statuses(cfg: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for n in cfg.nodes:
        out[n.node_id] = json.loads(await fetch_status(n.status, timeout=5))
    return out


async def _wait_full_view(cfg: Any, timeout: float = 30) -> None:
    want = {n.node_id for n in cfg.nodes}

    async def poll() -> None:
        while True:
            try:
                st = await _statuses(cfg)
                if all(s["view"] and set(s["view"]["members"]) == want for s in st.values()):
                    return
            except (OSError, TimeoutError, ValueError):
                pass
            await asyncio.sleep(0.1)

    await asyncio.wait_for(poll(), timeout)


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def throughput(protocol: str, nodes: int, size: int, seconds: float, warmup: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = write_cluster(Path(d), nodes=nodes, protocol=protocol, trace=False)
        cfg = load_config(path)
        load = ["--rate", "0", "--size", str(size), "--summary"]
        procs = {
            n: spawn_node(path, n, Path(d) / "logs", [*load, str(Path(d) / f"{n}.json")])
            for n in node_ids(nodes)
        }
        try:
            asyncio.run(_wait_full_view(cfg))
            time.sleep(warmup)
            a = asyncio.run(_statuses(cfg))
            t0 = time.monotonic()
            time.sleep(seconds)
            b = asyncio.run(_statuses(cfg))
            dt = time.monotonic() - t0
        finally:
            _stop(procs)
        summaries = [json.loads((Path(d) / f"{n}.json").read_text()) for n in node_ids(nodes)]
    rates = [
        (b[n]["metrics"]["delivered"] - a[n]["metrics"]["delivered"]) / dt for n in node_ids(nodes)
    ]
    views = {s["view"]["id"] if s["view"] else None for s in b.values()}
    return {
        "protocol": protocol,
        "nodes": nodes,
        "size": size,
        "delivered_per_s_per_node": round(sum(rates) / len(rates)),
        "min_node_rate": round(min(rates)),
        "latency_p50_ms": max(s["latency"]["p50_ms"] or 0 for s in summaries),
        "latency_p99_ms": max(s["latency"]["p99_ms"] or 0 for s in summaries),
        "peak_rss_mb": round(max(s["max_rss_kb"] for s in summaries) / 1024, 1),
        "views_at_end": len(views),
    }


def failover(protocol: str, nodes: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = write_cluster(
            Path(d), nodes=nodes, protocol=protocol, trace_format="jsonl", trace_rotate="200ms"
        )
        cfg = load_config(path)
        ids = node_ids(nodes)
        procs = {n: spawn_node(path, n, Path(d) / "logs", ["--rate", "50"]) for n in ids}
        victim = ids[-1]
        try:
            asyncio.run(_wait_full_view(cfg))
            time.sleep(1.0)
            kill_t = time.time_ns() - cfg.origin_ns
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            survivors = [n for n in ids if n != victim]

            async def gone() -> None:
                while True:
                    st = {n: json.loads(await fetch_status(cfg.node(n).status)) for n in survivors}
                    if all(s["view"] and victim not in s["view"]["members"] for s in st.values()):
                        return
                    await asyncio.sleep(0.05)

            asyncio.run(asyncio.wait_for(gone(), 30))
        finally:
            _stop(procs)
        t = read_trace(Path(d) / "trace").to_pydict()
    first: dict[str, int] = {}
    for node, ts, kind, members, trans in zip(
        t["node"], t["t"], t["kind"], t["members"], t["transitional"], strict=True
    ):
        if (
            kind == "view"
            and not trans
            and node in survivors
            and ts > kill_t
            and victim not in members
        ):
            first[node] = min(first.get(node, ts), ts)
    worst = max(first.values()) - kill_t
    return {"protocol": protocol, "nodes": nodes, "failover_ms": round(worst / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", action="append", help="default: totem and raincore")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--nodes", type=int, action="append")
    ap.add_argument("--size", type=int, action="append")
    ap.add_argument("--no-failover", action="store_true")
    args = ap.parse_args()
    protocols = args.protocol or ["totem", "raincore"]
    for proto in protocols:
        for n in args.nodes or [3, 5]:
            for size in args.size or [100, 1000]:
                print(json.dumps(throughput(proto, n, size, args.seconds, args.warmup)), flush=True)
        if not args.no_failover:
            for n in args.nodes or [3, 5]:
                print(json.dumps(failover(proto, n)), flush=True)


if __name__ == "__main__":
    main()
