"""IP-multicast mode end to end: three Totem nodes in a network namespace of the test's
own (loopback with multicast on and a multicast route), agreeing on one total order.

Totem's regular frames go out as ``Multicast`` effects: in this mode each is sent once
to the group address and reaches the other nodes through their group sockets (joined
with IP_ADD_MEMBERSHIP), so the run exercises both the group send and receive paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ringcast.runtime.security import write_key_file

CLUSTER = """
[cluster]
name = "mc"
protocol = "totem"
transport = "multicast"
security = "hmac"
key_file = "cluster.key"
state_dir = "state"
trace = false

[[network]]
multicast = "239.192.0.1:5405"
""" + "".join(
    f'\n[[node]]\nid = "{n}"\naddresses = ["127.0.0.1:{7100 + k}"]\n' for k, n in enumerate("ABC")
)

PROGRAM = """
import asyncio, sys
from contextlib import AsyncExitStack
from ringcast.runtime import Delivery, Group

async def main(cfg):
    async with AsyncExitStack() as stack:
        groups = [await stack.enter_async_context(Group.join(cfg, n)) for n in "ABC"]
        got = [[], [], []]

        async def collect(k, g):
            async for ev in g.events():
                if isinstance(ev, Delivery):
                    got[k].append(ev.msg_id)
                    if len(got[k]) == 30:
                        return

        tasks = [asyncio.create_task(collect(k, g)) for k, g in enumerate(groups)]
        def formed(g):
            return g.view is not None and len(g.members) == 3

        await asyncio.gather(*(g.wait_for(lambda g=g: formed(g), 30) for g in groups))
        for g in groups:
            for _ in range(10):
                await g.multicast(b"x", order="agreed")
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        assert got[0] == got[1] == got[2], got
        assert sorted(got[0]) == sorted(f"{n}:{i}" for n in "ABC" for i in range(1, 11)), got[0]
        print("agreed", len(got[0]))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2's `ip`")
def test_three_nodes_agree_over_ip_multicast(tmp_path: Path) -> None:
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    write_key_file(tmp_path / "cluster.key")
    (tmp_path / "prog.py").write_text(PROGRAM)
    ns = f"rcmc{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (
            ["link", "set", "lo", "up"],
            ["link", "set", "lo", "multicast", "on"],
            ["route", "add", "224.0.0.0/4", "dev", "lo"],
        ):
            subprocess.run(["ip", "-n", ns, *cmd], check=True)
        r = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                ns,
                sys.executable,
                str(tmp_path / "prog.py"),
                str(tmp_path / "cluster.toml"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == "agreed 30"
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
