"""GMS on the real runtime, unchanged: `ringcast cluster up --protocol gms`, and the
coordinator killed with kill -9 between PREPARE_VIEW and COMMIT_VIEW (two_phase)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from ringcast.cli.main import main
from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config
from ringcast.trace import read_trace

from .conftest import LogWatch, await_status, fetch_json, watching
from .netns import Nodes

NODES = ["n1", "n2", "n3", "n4"]


def test_cluster_up_gms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    assert main(["cluster", "up", "--nodes", "3", "--protocol", "gms", "--dir", str(d)]) == 0
    try:
        assert set(json.loads(capsys.readouterr().out)["pids"]) == {"n1", "n2", "n3"}
        cfg = load_config(d / "cluster.toml")
        for n in ("n1", "n2", "n3"):
            watch = LogWatch(d / "logs" / f"{n}.log")
            try:
                watch.wait_ready(0, 30)
            finally:
                watch.close()

        async def converged() -> list[Any]:
            return [
                await await_status(cfg.node(n).status, 30, members={"n1", "n2", "n3"})
                for n in ("n1", "n2", "n3")
            ]

        rows = asyncio.run(converged())
        assert {r["leader"] for r in rows} == {"n1"}
        assert {r["state"]["mode"] for r in rows} == {"two_phase"}
        assert [r["state"]["role"] for r in rows] == ["coordinator", "participant", "participant"]
    finally:
        assert main(["cluster", "down", "--dir", str(d)]) == 0


async def _await_prepared(addr: tuple[str, int], timeout: float) -> dict[str, Any]:
    """Until the node reports it holds a fully acknowledged view back from COMMIT_VIEW."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = await fetch_json(addr)
        if st["state"].get("phase") == "prepared":
            return st
        await asyncio.sleep(0.02)
    pytest.fail(f"no prepared view at {addr} within {timeout}s")


def test_coordinator_killed_between_prepare_and_commit(tmp_path: Path) -> None:
    """n4 is killed; the coordinator n1 prepares {n1,n2,n3}, every member acknowledges,
    and n1 is killed before it sends COMMIT_VIEW (the ``commit_delay`` hook holds the
    second phase for 3 s). n2, second in line, takes over and restarts the first
    phase; n2 and n3 install the same view, and nobody ever installs n1's view."""
    path = write_cluster(
        tmp_path,
        nodes=len(NODES),
        protocol="gms",
        # heartbeat_misses 10 (500 ms): a node process starved by a loaded machine at
        # start-up must not suspect the others before the scenario begins
        settings={"commit_delay": "3s", "heartbeat_misses": 10},
        trace_format="jsonl",
        trace_rotate="200ms",
    )
    cfg = load_config(path)
    with Nodes(path, tmp_path / "logs") as nodes, watching(tmp_path / "logs", NODES) as logs:
        for n in NODES:
            nodes.start(n, ["--rate", "50", "--size", "50"])
        for n in NODES:
            logs[n].wait_ready(0, 30)

        async def all_four() -> None:
            for n in NODES:
                await await_status(cfg.node(n).status, 30, members=set(NODES))

        asyncio.run(all_four())
        nodes.kill("n4")
        st = asyncio.run(_await_prepared(cfg.node("n1").status, 30))
        pending = st["state"]["pending"]
        nodes.kill("n1")

        async def survivors() -> list[Any]:
            return [
                await await_status(cfg.node(n).status, 30, members={"n2", "n3"})
                for n in ("n2", "n3")
            ]

        final = asyncio.run(survivors())
        assert final[0]["view"]["id"] == final[1]["view"]["id"]
        assert {r["leader"] for r in final} == {"n2"}
        nodes.stop(nodes=["n2", "n3"])
    trace = read_trace(tmp_path / "trace").to_pydict()
    views: dict[str, set[tuple[str, ...]]] = {}
    installed: dict[str, list[str]] = {}
    for node, kind, view, members in zip(
        trace["node"], trace["kind"], trace["view"], trace["members"], strict=True
    ):
        if kind == "view":
            views.setdefault(view, set()).add(tuple(members))
            installed.setdefault(node, []).append(view)
    assert all(len(m) == 1 for m in views.values()), views  # one member list per view id
    assert pending not in views, f"{pending} was never committed, yet installed"
    for n in ("n2", "n3"):  # (after SIGTERM n2 leaves and n3 goes on alone)
        assert final[0]["view"]["id"] in installed[n]
