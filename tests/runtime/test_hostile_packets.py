"""Forged, garbage, truncated, replayed and foreign-cluster datagrams are dropped and counted."""

from __future__ import annotations

import asyncio
import os
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from ringcast.core.codec import cluster_id_of, encode
from ringcast.layers.detector import Heartbeat
from ringcast.runtime import Delivery, Group
from ringcast.runtime.security import Sealer

from .conftest import PROTOCOLS, make_config, until

NODES = ["A", "B", "C"]
PROTOCOL = "totem" if "totem" in PROTOCOLS else "basic"


@pytest.mark.parametrize("security", ["hmac", "aes-gcm"])
def test_hostile_packets_are_dropped_while_the_group_delivers(
    tmp_path: Path, security: str
) -> None:
    cfg = make_config(tmp_path, NODES, PROTOCOL, security=security)
    target = cfg.node("A").addresses[0]

    async def main() -> None:
        async with AsyncExitStack() as stack:
            gs = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == set(NODES), 10) for g in gs)
            )
            # Capture genuine packets B sends to A, to replay and truncate them.
            captured: list[bytes] = []
            tr = gs[1].host._transport
            assert tr is not None
            real_send = tr.send

            def spy(packet: bytes, addr: tuple[str, int], net: int) -> None:
                if addr == target and len(captured) < 20:
                    captured.append(packet)
                real_send(packet, addr, net)

            tr.send = spy  # type: ignore[method-assign]
            for k in range(10):
                await gs[1].multicast(b"prime %d" % k)
            await until(lambda: len(captured) >= 1, 10, "a packet from B to A", gs[1])
            tr.send = real_send  # type: ignore[method-assign]

            frame = encode(Heartbeat(), sender="B", cluster_id=cluster_id_of("test"))
            forged = Sealer(os.urandom(32), security, cluster_id_of("test"), "B")
            foreign = Sealer(os.urandom(32), security, cluster_id_of("other"), "B")
            counts = {"bad_tag": 30, "foreign_cluster": 30, "replay": 5, "truncated": 30}
            attack = (
                [forged.seal(frame, 2**62 + k) for k in range(counts["bad_tag"])]
                + [foreign.seal(frame, 2**62 + k) for k in range(counts["foreign_cluster"])]
                + [captured[0]] * counts["replay"]
                + [c[: len(c) // 3] for c in (captured * 30)[: counts["truncated"]]]
                + [os.urandom(n) for n in (1, 7, 50, 300, 1400) for _ in range(10)]
            )
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                for pkt in attack:
                    sock.sendto(pkt, target)
            finally:
                sock.close()
            a = gs[0].host.metrics
            total = len(attack)
            await until(lambda: a.dropped >= total, 10, "every hostile packet dropped", gs[0])
            assert a.drops["bad_tag"] >= counts["bad_tag"]
            assert a.drops["foreign_cluster"] >= counts["foreign_cluster"]
            assert a.drops["replay"] >= counts["replay"]
            # Short random datagrams are truncated, long ones garbage; cut-down real
            # packets are either too short or fail their tag.
            assert a.drops["garbage"] >= 30
            assert a.drops["truncated"] >= 20
            assert a.drops["truncated"] + a.drops["bad_tag"] >= 20 + 30 + counts["truncated"]
            assert a.handler_errors == 0
            # The group keeps delivering, and the view never lost anyone.
            for g in gs:
                g.subscribe()
            await gs[2].multicast(b"after the storm")
            for g in gs:
                await asyncio.wait_for(_delivered(g, b"after the storm"), 10)
                assert set(g.members) == set(NODES)

    asyncio.run(main())


async def _delivered(g: Group, payload: bytes) -> None:
    async for ev in g.events():
        if isinstance(ev, Delivery) and ev.payload == payload:
            return
