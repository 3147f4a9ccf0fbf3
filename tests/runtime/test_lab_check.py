"""The lab checks the traces of the real runtime as it checks simulated ones: a
three-node group on loopback UDP multicasts, a node leaves, and ``lab check`` reads the
nodes' trace segments (JSON Lines or Parquet) and holds the protocol to its claims."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.pipeline import check_paths
from ringcast.lab.properties import claims
from ringcast.runtime import Delivery, Group
from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config

from .conftest import TOTAL_ORDER, LogWatch, await_status, make_config, watching
from .netns import Nodes

NODES = ["A", "B", "C"]
PER_NODE = 30


def _failing(props: dict[str, Any]) -> dict[str, Any]:
    """The properties that do not hold, with their status and counterexamples: what a
    failed assertion must show first (the whole document is cut short in the report)."""
    return {
        name: (p["status"], p["counterexamples"])
        for name, p in props.items()
        if p["status"] not in ("holds", "not applicable")
    }


async def _run_group(tmp_path: Path, protocol: str, trace_format: str) -> None:
    cfg = make_config(tmp_path, NODES, protocol, trace_format=trace_format, name="real")
    async with AsyncExitStack() as stack:
        gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
        await asyncio.gather(*(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs))
        got: dict[str, list[Delivery]] = {n: [] for n in NODES}

        async def read(g: Group) -> None:
            async for ev in g.events():
                if isinstance(ev, Delivery):
                    got[g.node_id].append(ev)
                    if len(got[g.node_id]) == PER_NODE * len(NODES):
                        return

        readers = [asyncio.create_task(read(g)) for g in gs]
        for k in range(PER_NODE):
            for g in gs:
                await g.multicast(f"{g.node_id}-{k}".encode(), order="agreed")
        try:
            await asyncio.wait_for(asyncio.gather(*readers), 30)
        except TimeoutError:  # say where it stood, for a failure seen once in a full run
            where = {
                g.node_id: {
                    "delivered": len(got[g.node_id]),
                    "state": g.host.state,
                    "view": g.host.interp.view,
                    "metrics": g.host.status()["metrics"],
                }
                for g in gs
            }
            raise AssertionError(f"not every delivery within 30 s: {where}") from None
        await gs[2].leave()
        await asyncio.gather(*(g.wait_view(lambda v: "C" not in v.members, 10) for g in gs[:2]))


@pytest.mark.parametrize(
    ("protocol", "trace_format"), [(p, f) for p in TOTAL_ORDER for f in ("jsonl", "parquet")]
)
def test_lab_check_reads_a_real_cluster_trace(
    spark: Any, tmp_path: Path, protocol: str, trace_format: str
) -> None:
    asyncio.run(_run_group(tmp_path, protocol, trace_format))
    files = list((tmp_path / "trace").rglob(f"*.{trace_format}"))
    assert {f.name.split(".")[0] for f in files} == set(NODES)
    doc = check_paths(spark, [tmp_path / "trace"], protocol=protocol)
    props = doc["properties"]
    assert doc["ok"] is True, _failing(props)
    for name in (
        "view_agreement",
        "total_order",
        "integrity",
        "fifo",
        "convergence",
        "leader_agreement",
    ):
        assert name in claims(protocol)
        assert props[name]["status"] == "holds", name
        assert props[name]["runs_checked"] == 1, name
        assert props[name]["protocols"][protocol]["runs_checked"] == 1, name


KILLED = "n2"


@pytest.mark.parametrize("protocol", ["totem", "raincore", "tribes"])
def test_a_node_killed_before_the_cluster_stopped_is_judged_crashed(
    spark: Any, tmp_path: Path, protocol: str
) -> None:
    """Three ``ringcast node`` processes; n2 is killed with kill -9 once its trace has a
    segment on disk, the others install a view without it and are then stopped
    (SIGTERM: each leaves and writes its stats row). n2's trace ends without one: the
    check judges it crashed where its trace ends, says so, and convergence holds (it
    was taken for a live node that never left the three-node view)."""
    path = write_cluster(tmp_path, nodes=3, protocol=protocol, trace_rotate="200ms")
    cfg = load_config(path)
    names = ["n1", "n2", "n3"]
    survivors = {"n1", "n3"}
    trace_dir = tmp_path / "trace"
    with watching(tmp_path / "logs", names) as logs, Nodes(path, tmp_path / "logs") as nodes:
        for n in names:
            nodes.start(n)
        for n in names:
            logs[n].wait_ready(0, 30)

        async def views(who: set[str], want: set[str]) -> None:
            await asyncio.gather(*(await_status(cfg.node(n).status, 30, members=want) for n in who))

        asyncio.run(views(set(names), set(names)))
        segments = LogWatch(trace_dir / ".watch")  # wakes at each file renamed into place
        try:
            segments.wait_for(
                lambda _: any(trace_dir.glob(f"{KILLED}.*.parquet")), 30, f"a segment of {KILLED}"
            )
        finally:
            segments.close()
        nodes.kill(KILLED)
        asyncio.run(views(survivors, survivors))
        nodes.stop(nodes=sorted(survivors))
    doc = check_paths(spark, [trace_dir], protocol=protocol)
    props = doc["properties"]
    assert doc["ok"] is True, _failing(props)
    assert props["convergence"]["status"] == "holds"
    (judged,) = doc["judged_crashed"]
    assert judged["node"] == KILLED
    assert "without a clean stop" in judged["note"] and "judged crashed" in judged["note"]
    json.dumps(doc)  # check.json holds it as it is
