"""A cluster of OS processes on loopback: kill -9 of one node, new view, restart, rejoin.

Every node multicasts throughout; afterwards the runtime traces are checked for
integrity (no duplicates, nothing delivered that was not submitted), per-sender FIFO
and, for the total-order protocols, the same relative order at every survivor.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config
from ringcast.trace import read_trace

from .conftest import PROTOCOLS, TOTAL_ORDER, await_status, fetch_json, watching
from .netns import Nodes

NODES = ["n1", "n2", "n3", "n4"]
VICTIM = "n2"
LOAD = ["--rate", "150", "--size", "100"]


async def _await_views(cfg: Any, nodes: list[str], want: set[str], timeout: float) -> None:
    """Until every node in ``nodes`` reports a regular view with exactly ``want``."""
    await asyncio.gather(*(await_status(cfg.node(n).status, timeout, members=want) for n in nodes))


async def _await_progress(cfg: Any, nodes: list[str], more: int, timeout: float) -> None:
    """Until each node in ``nodes`` delivered ``more`` messages beyond its count now."""

    async def one(n: str) -> None:
        addr = cfg.node(n).status
        base = (await fetch_json(addr))["metrics"]["delivered"]
        await await_status(addr, timeout, delivered=base + more)

    await asyncio.gather(*(one(n) for n in nodes))


def _check_traces(trace: dict[str, list[Any]], protocol: str) -> dict[str, list[str]]:
    rows = sorted(
        zip(trace["node"], trace["i"], trace["kind"], trace["msg"], trace["detail"], strict=True),
        key=lambda r: (r[0], r[1]),
    )
    submitted = {m for _, _, k, m, _ in rows if k == "submit"}
    # Deliveries per node incarnation (a restart starts a new sequence).
    seqs: dict[tuple[str, int], list[str]] = {}
    boot: dict[str, int] = {}
    for node, _, kind, msg, detail in rows:
        if kind == "fault" and detail and '"restart"' in detail:
            boot[node] = boot.get(node, 0) + 1
        elif kind == "deliver":
            seqs.setdefault((node, boot.get(node, 0)), []).append(msg)
    assert boot.get(VICTIM) == 1, "the restarted node's trace shows no restart"
    for (node, b), seq in seqs.items():
        assert len(seq) == len(set(seq)), f"{node} (boot {b}) delivered a message twice"
        for m in seq:
            # The victim's last trace segment may be lost with kill -9: its own
            # submit rows may be missing, nobody else's may.
            assert m in submitted or m.startswith(f"{VICTIM}:"), f"{node} delivered unsent {m}"
        last: dict[str, int] = {}
        for m in seq:
            sender, counter = m.rsplit(":", 1)
            assert int(counter) > last.get(sender, -1), f"{node}: {m} out of FIFO order"
            last[sender] = int(counter)
    survivors = [n for n in NODES if n != VICTIM]
    if protocol in TOTAL_ORDER:
        ref = seqs[(survivors[0], 0)]
        pos = {m: k for k, m in enumerate(ref)}
        for n in survivors[1:]:
            common = [m for m in seqs[(n, 0)] if m in pos]
            assert [pos[m] for m in common] == sorted(pos[m] for m in common), (
                f"{n} and {survivors[0]} delivered common messages in different orders"
            )
    return {f"{n}#{b}": s for (n, b), s in seqs.items()}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kill_restart_rejoin(tmp_path: Path, protocol: str) -> None:
    path = write_cluster(
        tmp_path, nodes=len(NODES), protocol=protocol, trace_format="jsonl", trace_rotate="200ms"
    )
    cfg = load_config(path)
    with watching(tmp_path / "logs", NODES) as logs, Nodes(path, tmp_path / "logs") as nodes:
        for n in NODES:
            nodes.start(n, LOAD)
        for n in NODES:
            logs[n].wait_ready(0, 30)  # its status endpoint listens from then on
        everyone = set(NODES)
        survivors = [n for n in NODES if n != VICTIM]
        asyncio.run(_await_views(cfg, NODES, everyone, 30))
        asyncio.run(_await_progress(cfg, NODES, 100, 30))
        nodes.procs[VICTIM].send_signal(signal.SIGKILL)
        nodes.procs[VICTIM].wait(10)
        asyncio.run(_await_views(cfg, survivors, set(survivors), 30))
        asyncio.run(_await_progress(cfg, survivors, 100, 30))
        seen = len(logs[VICTIM].records)
        nodes.start(VICTIM, LOAD)
        logs[VICTIM].wait_ready(seen, 30)
        asyncio.run(_await_views(cfg, NODES, everyone, 30))
        asyncio.run(_await_progress(cfg, NODES, 100, 30))
        nodes.stop()
    trace = read_trace(tmp_path / "trace", check_order=True).to_pydict()
    seqs = _check_traces(trace, protocol)
    for n in NODES:
        if n != VICTIM:  # the victim's first trace segments may have died with it
            assert len(seqs[f"{n}#0"]) > 100
    assert len(seqs[f"{VICTIM}#1"]) > 50
