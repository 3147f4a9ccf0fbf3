"""A freshly started local cluster does not flap: ``cluster up`` of three nodes of
every family, with a CPU burner taking one of the two cores, forms one view of all
three and keeps it while nothing happens (in basic and GMS even while one node is
stopped for 300 ms); a ``kill -9`` then gives exactly one new view
at each survivor. Every family at once (idle nodes cost little CPU), for a few seconds:
``bench/cluster_steady.py`` holds 60 s at 3 and 5 nodes (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ringcast.runtime.cluster import cluster_down, cluster_up
from ringcast.runtime.config import load_config
from ringcast.runtime.steady import Verdict, installed_views, judge

from .conftest import PROTOCOLS, await_status

NODES = ["n1", "n2", "n3"]
KILLED = "n3"
HOLD_S = 6.0
"""The quiet stretch before the kill (the bench's is 60 s)."""
STALL_S = 0.3
"""How long n2 is stopped (SIGSTOP) halfway through the quiet stretch, in the families
whose heartbeat detector confirms a suspicion by a direct probe before it counts: longer
than their 200 ms detection time, shorter than it plus the probe's 150 ms."""
STALLED = ("basic", "gms")
AFTER_S = 3.0
"""The quiet stretch after the survivors' new view."""


@pytest.fixture
def burner() -> Iterator[None]:
    """A busy loop in a process of its own: one of the machine's cores taken."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def _one(directory: Path, protocol: str) -> Verdict:
    pids = cluster_up(directory, nodes=len(NODES), protocol=protocol)
    try:
        cfg = load_config(directory / "cluster.toml")

        async def views(who: list[str], want: set[str]) -> None:
            await asyncio.gather(*(await_status(cfg.node(n).status, 30, members=want) for n in who))

        asyncio.run(views(NODES, set(NODES)))
        time.sleep(HOLD_S / 2)  # nothing is awaited: any view in this stretch is a flap
        if protocol in STALLED:  # n2 off the CPU for longer than its detection time
            os.kill(pids["n2"], signal.SIGSTOP)
            time.sleep(STALL_S)
            os.kill(pids["n2"], signal.SIGCONT)
        time.sleep(HOLD_S / 2)
        split = time.time_ns() - cfg.origin_ns
        os.kill(pids[KILLED], signal.SIGKILL)
        survivors = [n for n in NODES if n != KILLED]
        asyncio.run(views(survivors, set(survivors)))
        time.sleep(AFTER_S)  # likewise: a second view after the crash's is a flap
        until = time.time_ns() - cfg.origin_ns  # the views of the nodes leaving are not
    finally:
        cluster_down(directory)
    return judge(installed_views(directory / "trace"), NODES, split, KILLED, until)


def test_a_fresh_cluster_holds_one_view_and_a_crash_gives_one_more(
    tmp_path: Path, burner: None
) -> None:
    with ThreadPoolExecutor(len(PROTOCOLS)) as pool:
        futures = {p: pool.submit(_one, tmp_path / p, p) for p in PROTOCOLS}
        verdicts = {p: f.result() for p, f in futures.items()}
    bad = {
        p: v
        for p, v in verdicts.items()
        if not (v.formed and v.settled and v.extra_at_start == 0 and v.extra_after == 0)
    }
    assert not bad, bad
