"""A replicated key-value store on ringcast's Group API.

Every write is multicast in agreed (total) order and applied by every replica in
delivery order, so all replicas hold the same map. Run it as::

    python examples/kvstore.py --protocol totem

which starts three replicas in one process on loopback ports, writes from all of
them at once, and prints each replica's final map (they are identical).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

from ringcast.runtime import Delivery, Group, load_config
from ringcast.runtime.config import render_config
from ringcast.runtime.security import write_key_file


class KVStore:
    """One replica: ``await kv.set(key, value)``; ``kv.data`` is the replicated map."""

    def __init__(self, group: Group):
        self.group = group
        self.data: dict[str, str] = {}
        self.applied = 0
        self._changed = asyncio.Condition()
        self._task = asyncio.create_task(self._apply_loop())

    async def set(self, key: str, value: str) -> None:
        op = json.dumps({"op": "set", "key": key, "value": value}).encode()
        await self.group.multicast(op, order="agreed")

    async def _apply_loop(self) -> None:
        async for ev in self.group.events():
            if isinstance(ev, Delivery):
                op = json.loads(ev.payload)
                if op["op"] == "set":
                    self.data[op["key"]] = op["value"]
                self.applied += 1
                async with self._changed:
                    self._changed.notify_all()

    async def wait_applied(self, n: int, timeout: float = 20.0) -> None:
        """Wait until this replica applied ``n`` operations."""

        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.applied >= n)

        await asyncio.wait_for(wait(), timeout)

    def close(self) -> None:
        self._task.cancel()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_demo_cluster(directory: Path, protocol: str, names: list[str]) -> Path:
    """A loopback cluster file and key for the demo replicas."""
    key = directory / "cluster.key"
    if not key.exists():
        write_key_file(key)
    nodes = [(n, [f"127.0.0.1:{_free_port()}"], None) for n in names]
    path = directory / "cluster.toml"
    path.write_text(render_config(name="kv", protocol=protocol, nodes=nodes, trace_format="jsonl"))
    return path


async def demo(directory: Path, protocol: str, writes: int = 20) -> list[dict[str, str]]:
    """Three replicas write concurrently to overlapping keys; return their final maps."""
    names = ["kv1", "kv2", "kv3"]
    cfg = load_config(write_demo_cluster(directory, protocol, names))
    async with AsyncExitStack() as stack:
        groups = [await stack.enter_async_context(Group.join(cfg, n)) for n in names]
        await asyncio.gather(
            *(g.wait_view(lambda v: len(v.members) == len(names), 10) for g in groups)
        )
        stores = [KVStore(g) for g in groups]

        async def writer(kv: KVStore) -> None:
            for k in range(writes):
                await kv.set(f"key{k % 5}", f"{kv.group.node_id}:{k}")
                await asyncio.sleep(0.001)

        await asyncio.gather(*(writer(kv) for kv in stores))
        await asyncio.gather(*(kv.wait_applied(writes * len(names)) for kv in stores))
        for kv in stores:
            kv.close()
        return [dict(sorted(kv.data.items())) for kv in stores]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default="totem")
    ap.add_argument("--writes", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        maps = asyncio.run(demo(Path(d), args.protocol, args.writes))
    for name, m in zip(["kv1", "kv2", "kv3"], maps, strict=True):
        print(name, json.dumps(m))
    print("replicas agree" if all(m == maps[0] for m in maps) else "REPLICAS DIFFER")


if __name__ == "__main__":
    main()
