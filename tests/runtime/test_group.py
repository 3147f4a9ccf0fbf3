"""The Group API over real loopback UDP, three nodes in one event loop."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from ringcast.runtime import Delivery, Group, LeaderChange, LockUnavailable, ViewChange
from ringcast.trace import read_trace

from .conftest import PROTOCOLS, TOTAL_ORDER, make_config, until

NODES = ["A", "B", "C"]


async def _collect(g: Group, want: int, out: list[Delivery]) -> None:
    async for ev in g.events():
        if isinstance(ev, Delivery):
            out.append(ev)
            if len(out) == want:
                return


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_three_nodes_multicast_and_views(tmp_path: Path, protocol: str) -> None:
    cfg = make_config(tmp_path, NODES, protocol, security="aes-gcm")
    per_node = 60

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            assert {g.members for g in gs} == {tuple(gs[0].members)}
            assert all(g.leader in NODES for g in gs)
            got: dict[str, list[Delivery]] = {n: [] for n in NODES}
            readers = [asyncio.create_task(_collect(g, per_node * 3, got[g.node_id])) for g in gs]

            async def send(g: Group) -> None:
                me = g.node_id
                for k in range(per_node):
                    await g.multicast(f"{me}-{k}".encode(), order="agreed")
                    if k % 10 == 9:
                        # basic has no flow control: keep at most 10 of our own
                        # messages undelivered (the reader task fills got[me]).
                        await until(
                            lambda k=k: sum(d.sender == me for d in got[me]) >= k + 1 - 10,
                            20,
                            f"{me}'s own messages delivered",
                            g,
                        )

            await asyncio.gather(*(send(g) for g in gs))
            await asyncio.wait_for(asyncio.gather(*readers), 20)
            for n in NODES:
                ids = [d.msg_id for d in got[n]]
                assert len(ids) == len(set(ids)) == per_node * 3
                for s in NODES:  # per-sender FIFO holds for every protocol
                    mine = [d.payload for d in got[n] if d.sender == s]
                    assert mine == [f"{s}-{k}".encode() for k in range(per_node)]
            if protocol in TOTAL_ORDER:
                orders = {tuple(d.msg_id for d in got[n]) for n in NODES}
                assert len(orders) == 1, "total order differs between nodes"

            # C leaves: A and B install a view without it.
            await gs[2].leave()
            await asyncio.gather(*(g.wait_view(lambda v: "C" not in v.members, 10) for g in gs[:2]))

    asyncio.run(main())
    trace = read_trace(tmp_path / "trace").to_pydict()
    kinds = set(trace["kind"])
    assert {"submit", "deliver", "view", "stats"} <= kinds
    assert set(trace["run"]) == {"test"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_lock(tmp_path: Path, protocol: str) -> None:
    cfg = make_config(tmp_path, NODES, protocol)

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            if not gs[0].host.spec.offers_lock:
                with pytest.raises(LockUnavailable):
                    async with gs[0].lock():
                        pass
                return
            holders: list[str] = []
            inside = 0

            async def critical(g: Group) -> None:
                nonlocal inside
                for _ in range(2):
                    async with g.lock():
                        inside += 1
                        assert inside == 1, "two lock holders at once"
                        holders.append(g.node_id)
                        # Hold the lock for a while (not a wait for anything): a second
                        # holder, if the protocol allowed one, would show up meanwhile.
                        await asyncio.sleep(0.002)
                        inside -= 1

            await asyncio.wait_for(asyncio.gather(*(critical(g) for g in gs)), 20)
            assert sorted(holders) == sorted(NODES * 2)

    asyncio.run(main())


def test_multicast_rejects_bad_input(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A"], "basic")

    async def main() -> None:
        async with Group.join(cfg, "A") as g:
            with pytest.raises(ValueError, match="order"):
                await g.multicast(b"x", order="random")
            with pytest.raises(TypeError):
                await g.multicast("text")  # type: ignore[arg-type]
            await until(lambda: g.view is not None, 5, "a first view", g)
            evs = []
            g.subscribe()
            await g.multicast(b"solo")
            async for ev in g.events():
                evs.append(ev)
                if isinstance(ev, Delivery):
                    break
            assert evs[-1].payload == b"solo"
            assert all(isinstance(e, Delivery | ViewChange | LeaderChange) for e in evs)

    asyncio.run(main())


@pytest.mark.parametrize("protocol", TOTAL_ORDER)
def test_every_node_names_the_same_leader_after_a_rejoin(tmp_path: Path, protocol: str) -> None:
    """The first member leaves and joins again: every node of the new view names the
    same leader (a leader kept from an earlier view, which the rejoining node never
    saw, would split them), and the leader is a member of that view."""
    cfg = make_config(tmp_path, NODES, protocol)

    def leaders(gs: list[Group]) -> set[str | None]:
        return {g.leader for g in gs}

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            assert len(leaders(gs)) == 1
            first = gs[0].host.view.members[0]  # type: ignore[union-attr]
            k = NODES.index(first)
            await gs[k].leave()
            rest = gs[:k] + gs[k + 1 :]
            await asyncio.gather(*(g.wait_view(lambda v: first not in v.members, 10) for g in rest))
            assert leaders(rest) == {rest[0].host.view.members[0]}  # type: ignore[union-attr]
            back = await stack.enter_async_context(Group.join(cfg, first))
            gs = [*rest, back]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            views = {g.host.view for g in gs}
            assert len(views) == 1, views
            assert leaders(gs) == {views.pop().members[0]}  # type: ignore[union-attr]

    asyncio.run(main())


def test_totem_without_authentication(tmp_path: Path) -> None:
    """``security = "none"``: no tag on the wire, the same agreed deliveries everywhere."""
    cfg = make_config(tmp_path, NODES, "totem", security="none")

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            got: dict[str, list[Delivery]] = {n: [] for n in NODES}
            readers = [asyncio.create_task(_collect(g, 30, got[g.node_id])) for g in gs]
            for g in gs:
                for k in range(10):
                    await g.multicast(f"{g.node_id}-{k}".encode())
            await asyncio.wait_for(asyncio.gather(*readers), 20)
            assert len({tuple(d.msg_id for d in got[n]) for n in NODES}) == 1
            assert sorted(d.payload for d in got["A"]) == sorted(
                f"{n}-{k}".encode() for n in NODES for k in range(10)
            )
            assert all(g.host.metrics.drops.get("bad_tag", 0) == 0 for g in gs)

    asyncio.run(main())
