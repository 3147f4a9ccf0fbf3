"""Tribes on the real runtime, unchanged: processes on loopback (the coordinator is
killed with kill -9 and the survivors agree on the next one; ``ringcast status`` shows
the view id and the coordinator), and in-process groups (``Group.leader``)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from ringcast.cli.runtime import gather_status, status_table
from ringcast.runtime import group as group_module
from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config
from ringcast.runtime.group import Group
from ringcast.trace import read_trace

from .conftest import await_status, make_config, until, watching
from .netns import Nodes

NODES = ["n1", "n2", "n3", "n4"]
LOAD = ["--rate", "100", "--size", "50"]


def _leaders(trace: dict[str, list[object]]) -> dict[str, list[tuple[str, str]]]:
    """Per node, its ``leader`` rows as (view id, leader), in order."""
    import json

    out: dict[str, list[tuple[str, str]]] = {}
    rows = sorted(
        zip(trace["node"], trace["i"], trace["kind"], trace["view"], trace["detail"], strict=True),
        key=lambda r: (r[0], r[1]),
    )
    for node, _, kind, view, detail in rows:
        if kind == "leader":
            out.setdefault(str(node), []).append((str(view), json.loads(str(detail))["leader"]))
    return out


def test_coordinator_killed_survivors_agree_on_the_next(tmp_path: Path) -> None:
    path = write_cluster(
        tmp_path, nodes=len(NODES), protocol="tribes", trace_format="jsonl", trace_rotate="200ms"
    )
    cfg = load_config(path)
    survivors = NODES[1:]
    with Nodes(path, tmp_path / "logs") as nodes, watching(tmp_path / "logs", NODES) as logs:
        for n in NODES:
            nodes.start(n, LOAD)
        for n in NODES:
            logs[n].wait_ready(0, 30)

        async def views(which: list[str], want: set[str]) -> list[dict[str, object]]:
            for n in which:
                await await_status(cfg.node(n).status, 30, members=want)
            return [r for r in await gather_status(cfg) if r["node"] in which]

        rows = asyncio.run(views(NODES, set(NODES)))
        assert {r["leader"] for r in rows} == {"n1"}
        assert len({r["view"]["id"] for r in rows}) == 1  # type: ignore[index]
        assert all(r["state"]["coordinator"] == "n1" for r in rows)  # type: ignore[index]
        table = status_table(rows)
        head = table.splitlines()[0].split()
        assert head[:5] == ["node", "view", "members", "state", "leader"]
        for line in table.splitlines()[1:]:
            assert line.split()[4] == "n1"  # the coordinator column
        nodes.kill("n1")
        rows = asyncio.run(views(survivors, set(survivors)))
        assert {r["leader"] for r in rows} == {"n2"}
        ids = {r["view"]["id"] for r in rows}  # type: ignore[index]
        assert len(ids) == 1 and next(iter(ids)).startswith("n2:")
        nodes.stop(nodes=survivors)
    trace = read_trace(tmp_path / "trace", check_order=True).to_pydict()
    leaders = _leaders(trace)
    agreed = next(iter(ids))
    for n in survivors:  # (the SIGTERMs' graceful leaves install later views: not "last")
        assert (agreed, "n2") in leaders[n], leaders[n]
    # every node that named a leader for a view named the same one
    per_view: dict[str, set[str]] = {}
    for rows_ in leaders.values():
        for view, leader in rows_:
            per_view.setdefault(view, set()).add(leader)
    assert all(len(s) == 1 for s in per_view.values())


def test_group_leader_follows_the_coordinator(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A", "B", "C"], "tribes")

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in "ABC"]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == {"A", "B", "C"}, 10) for g in gs)
            )
            assert {g.leader for g in gs} == {"A"}
            assert len({g.view.view_id for g in gs if g.view is not None}) == 1
            await gs[0].leave()  # the coordinator leaves
            await asyncio.gather(*(g.wait_view(lambda v: "A" not in v.members, 10) for g in gs[1:]))
            await until(lambda: all(g.leader == "B" for g in gs[1:]), 10, "B coordinator", *gs[1:])
            assert gs[1].view == gs[2].view and gs[1].members == ("B", "C")

    asyncio.run(main())


LeaderChange = getattr(group_module, "LeaderChange", None)


@pytest.mark.skipif(
    LeaderChange is None,
    reason="Group.events() reports leader changes once the runtime's LeaderChange event is in",
)
def test_group_events_report_the_coordinator_change(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A", "B", "C"], "tribes")

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in "ABC"]
            for g in gs:
                g.subscribe()
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == {"A", "B", "C"}, 10) for g in gs)
            )
            await gs[0].leave()
            seen: list[object] = []

            async def collect(g: Group) -> None:
                async for ev in g.events():
                    seen.append(ev)
                    if isinstance(ev, LeaderChange) and ev.leader == "B":  # type: ignore[arg-type]
                        return

            await asyncio.wait_for(collect(gs[1]), 10)
            changes = [e for e in seen if isinstance(e, LeaderChange)]  # type: ignore[arg-type]
            assert changes[-1].view_id == gs[1].view.view_id  # type: ignore[union-attr]
            assert changes[-1].view_id.startswith("B:")  # type: ignore[union-attr]

    asyncio.run(main())


def test_saturating_members_still_form_one_view(tmp_path: Path) -> None:
    """Decision 20 (docs/protocols/tribes.md): with no flow control, three nodes loading
    as fast as they could (``--rate 0``) queued thousands of unacknowledged messages a
    peer, resent them all every rto, and never left their views of one (23 views each in
    8 s). With the reliable layer's window holding the application, they form one view
    and deliver."""
    path = write_cluster(tmp_path, nodes=3, protocol="tribes", trace=False)
    cfg = load_config(path)
    ids = ["n1", "n2", "n3"]
    with Nodes(path, tmp_path / "logs") as nodes, watching(tmp_path / "logs", ids) as logs:
        for n in ids:
            nodes.start(n, ["--rate", "0", "--size", "100"])
        for n in ids:
            logs[n].wait_ready(0, 30)

        async def full() -> list[dict[str, object]]:
            for n in ids:
                await await_status(cfg.node(n).status, 30, members=set(ids))
            return await gather_status(cfg)

        rows = asyncio.run(full())
        assert len({r["view"]["id"] for r in rows}) == 1  # type: ignore[index]
        assert all(r["metrics"]["delivered"] > 0 for r in rows)  # type: ignore[index]
        nodes.stop(nodes=ids)
