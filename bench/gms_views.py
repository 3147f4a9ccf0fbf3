"""GMS: what a view change costs in each installation mode (docs/benchmarks.md).

Simulated (virtual time, 1 ms +-0.25 ms links, no loss), group sizes 3 to 64:

* join: a new member joins a group of n; *install* is the time from the coordinator
  casting the view to the last member installing it, *join* the time from the
  joiner's start to its own installation (discovery_timeout is 30 ms of it);
* crash: a member crashes; the time from the coordinator casting the view without it
  to the last survivor installing it (failure detection, about 200 ms, not included);
* merge: the group splits in two halves and heals; the time from the heal to the
  last member installing the merge view;
* msgs: membership messages sent for the join's view change (JOIN, JoinRsp, VIEW,
  VIEW_ACK, PREPARE_VIEW, COMMIT_VIEW, STATUS_VIEW, discovery), counted per datagram.

On loopback (``--processes``): n real processes (``ringcast node``); one participant
is killed with kill -9 and the survivors' traces give the time from the coordinator
casting the view to the last survivor installing it (heartbeat_misses = 40, so that
processes starting a second apart do not exclude each other).

    python bench/gms_views.py [--sizes 3,8,16,32,64] [--modes plain,acks,two_phase]
                              [--processes 3,4,5] [--seeds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ringcast.core.effects import Multicast, Send
from ringcast.core.machine import Machine, MachineContext
from ringcast.protocols import registry
from ringcast.protocols.gms import SPEC, make_gms
from ringcast.sim import Simulation, parse_scenario

MS = 1_000_000
MEMBERSHIP = {
    "Join",
    "JoinRsp",
    "ViewMsg",
    "ViewAck",
    "PrepareView",
    "CommitView",
    "StatusView",
    "FindMbrs",
    "FindMbrsRsp",
    "Leave",
}
SENT: Counter[str] = Counter()


class _Counting:
    """GMS's stack, counting the membership datagrams it sends (a multicast is one per
    peer of the domain)."""

    def __init__(self, inner: Machine, peers: int):
        self.inner = inner
        self.node_id = inner.node_id
        self.peers = peers

    def handle(self, event: Any, now: int) -> list[Any]:
        out = self.inner.handle(event, now)
        for e in out:
            name = type(getattr(e, "msg", None)).__name__
            if name in MEMBERSHIP:
                if type(e) is Multicast:
                    SENT[name] += self.peers - 1
                elif type(e) is Send:
                    SENT[name] += 1
        return out


def _factory(ctx: MachineContext) -> Machine:
    return _Counting(make_gms(ctx), len(ctx.peers))


COUNTING = registry.register(
    registry.ProtocolSpec("gms-counting", _factory, settings=SPEC.settings, claims=SPEC.claims)
)


def names(n: int) -> list[str]:
    return [f"n{k:02d}" for k in range(n)]


def _doc(n: int, mode: str, **extra: Any) -> dict[str, Any]:
    doc = {
        "name": "bench",
        "protocol": COUNTING.name,
        "nodes": names(n),
        "duration": "3s",
        "count_bytes": False,
        "settings": {"view_install": mode},
        "network": {"latency": {"dist": "uniform", "low": "750us", "high": "1250us"}},
    }
    doc.update(extra)
    return doc


def _install_time(rows: list[dict], view: str, since: int) -> float:
    t = max(r["t"] for r in rows if r["kind"] == "view" and r["view"] == view)
    return (t - since) / MS


def join(n: int, mode: str, seed: int) -> dict[str, float]:
    SENT.clear()
    doc = _doc(n, mode, joiners=["zz"], nemesis=[{"at": "1s", "action": "join", "node": "zz"}])
    rows = Simulation(parse_scenario(doc), seed).run().events()
    (cast,) = [r for r in rows if r["kind"] == "cast_view" and "join" in r["detail"]["why"]]
    mine = min(r["t"] for r in rows if r["kind"] == "view" and r["node"] == "zz")
    return {
        "install": _install_time(rows, cast["view"], cast["t"]),
        "join": (mine - 1000 * MS) / MS,
        "msgs": float(sum(SENT.values())),
    }


def crash(n: int, mode: str, seed: int) -> float:
    victim = names(n)[n // 2]
    doc = _doc(n, mode, nemesis=[{"at": "1s", "action": "crash", "node": victim}])
    rows = Simulation(parse_scenario(doc), seed).run().events()
    casts = [r for r in rows if r["kind"] == "cast_view" and victim not in r["members"]]
    last = casts[-1]  # two_phase may restart phase one; the committed one is the last
    first = casts[0]
    return _install_time(rows, last["view"], first["t"])


def merge(n: int, mode: str, seed: int) -> float:
    ns = names(n)
    half = [ns[: n // 2], ns[n // 2 :]]
    doc = _doc(
        n,
        mode,
        duration="5s",
        nemesis=[
            {"at": "500ms", "action": "partition", "groups": half},
            {"at": "2s", "action": "heal"},
        ],
    )
    rows = Simulation(parse_scenario(doc), seed).run().events()
    final = [r for r in rows if r["kind"] == "view" and len(r["members"]) == n and r["t"] > 2e9]
    if not final:
        return float("nan")
    return _install_time(rows, final[-1]["view"], 2000 * MS)


def simulated(sizes: list[int], modes: list[str], seeds: int) -> None:
    print(f"simulated: medians over seeds 1..{seeds} (ms; msgs per join view change)")
    print(f"{'mode':10} {'n':>3} {'install':>8} {'join':>7} {'msgs':>6} {'crash':>7} {'merge':>7}")
    for mode in modes:
        for n in sizes:
            js = [join(n, mode, s) for s in range(1, seeds + 1)]
            cr = [crash(n, mode, s) for s in range(1, seeds + 1)]
            mg = [merge(n, mode, s) for s in range(1, seeds + 1)]
            med = statistics.median
            print(
                f"{mode:10} {n:>3} {med(j['install'] for j in js):8.2f} "
                f"{med(j['join'] for j in js):7.1f} {med(j['msgs'] for j in js):6.0f} "
                f"{med(cr):7.2f} {med(mg):7.0f}",
                flush=True,
            )


def loopback(counts: list[int], modes: list[str], seeds: int) -> None:
    from ringcast.runtime.cluster import spawn_node, write_cluster
    from ringcast.runtime.config import load_config
    from ringcast.runtime.status import fetch_status
    from ringcast.trace import read_trace

    async def views(cfg: Any, nodes: list[str], want: set[str]) -> None:
        for node in nodes:
            query = "wait=30&members=" + ",".join(sorted(want))
            for _ in range(200):  # until the process listens
                try:
                    body = await fetch_status(cfg.node(node).status, "/status?" + query, 35)
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            st = json.loads(body)
            if not st.get("condition_met"):
                raise SystemExit(f"{node}: no view of {sorted(want)}")

    print("loopback processes: kill -9 of one participant; cast -> last install (ms)")
    print(f"{'mode':10} {'n':>3} {'install':>8}")
    for mode in modes:
        for n in counts:
            got = []
            for _ in range(seeds):
                with tempfile.TemporaryDirectory() as d:
                    path = write_cluster(
                        Path(d), nodes=n, protocol="gms",
                        # processes start up to a second apart: a longer suspicion
                        # timeout keeps them from excluding each other at start
                        # (plain never merges such a member back)
                        settings={"view_install": mode, "heartbeat_misses": 40},
                        trace_format="jsonl",
                    )  # fmt: skip
                    cfg = load_config(path)
                    ns = [f"n{k}" for k in range(1, n + 1)]
                    procs = {x: spawn_node(path, x, Path(d) / "logs") for x in ns}
                    try:
                        asyncio.run(views(cfg, ns, set(ns)))
                        victim = ns[-1]
                        procs[victim].send_signal(signal.SIGKILL)
                        procs[victim].wait(10)
                        asyncio.run(views(cfg, ns[:-1], set(ns[:-1])))
                        for x in ns[:-1]:
                            procs[x].send_signal(signal.SIGTERM)
                            procs[x].wait(20)
                    finally:
                        for p in procs.values():
                            if p.poll() is None:
                                p.kill()
                                p.wait()
                    rows = read_trace(Path(d) / "trace").to_pylist()
                    casts = [
                        r
                        for r in rows
                        if r["kind"] == "cast_view"
                        and victim not in (r["members"] or [])
                        and len(r["members"] or []) == n - 1
                    ]
                    last = casts[-1]
                    t = max(
                        r["t"] for r in rows if r["kind"] == "view" and r["view"] == last["view"]
                    )
                    got.append((t - casts[0]["t"]) / MS)
            print(f"{mode:10} {n:>3} {statistics.median(got):8.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="3,8,16,32,64")
    ap.add_argument("--modes", default="plain,acks,two_phase")
    ap.add_argument("--processes", default="", help="loopback process counts, e.g. 3,4,5")
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    modes = a.modes.split(",")
    t0 = time.perf_counter()
    if a.sizes:
        simulated([int(x) for x in a.sizes.split(",")], modes, a.seeds)
    if a.processes:
        loopback([int(x) for x in a.processes.split(",")], modes, a.seeds)
    wall = round(time.perf_counter() - t0, 1)
    print(json.dumps({"wall_s": wall, "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
