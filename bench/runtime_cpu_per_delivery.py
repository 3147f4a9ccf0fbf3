"""CPU per delivered message: three Totem nodes in one process on loopback, all saturating.

The three nodes share one event loop, so the process is busy all the time and its CPU
time is all three nodes' work: deliveries per CPU second (every node's deliveries over
the process's user and system time) is the cost of the runtime's whole path of a
message, from submit to delivery at every node, without the scheduling of separate
processes on a shared machine. It moves by a few per cent between runs where the
multi-process benchmark (``runtime_throughput.py``) moves by 10-20 %, so it is the one to
compare two versions of the Python path with; the multi-process one gives the rates to
quote against corosync.

    python bench/runtime_cpu_per_delivery.py [--size 100 --size 1000] [--seconds 5]
        [--repeat 3] [--no-udp-offload] [--security hmac|aes-gcm|none]

Every line printed is a JSON object; with ``--repeat`` a line of medians follows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ringcast.runtime import Group
from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config
from ringcast.runtime.group import wait_for_change
from ringcast.runtime.node import LatencyLog, Workload, _consume, _generate, tune_gc

NODES = ("n1", "n2", "n3")


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def _run(size: int, seconds: float, udp_offload: bool, security: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        path = write_cluster(Path(d), nodes=3, protocol="totem", trace=False, security=security)
        if not udp_offload:
            text = path.read_text().replace("[cluster]\n", "[cluster]\nudp_offload = false\n", 1)
            path.write_text(text)
        cfg = load_config(path)
        async with contextlib.AsyncExitStack() as stack:
            groups = [await stack.enter_async_context(Group.join(cfg, n)) for n in NODES]
            for g in groups:
                g.subscribe()

            def full() -> bool:
                views = [g.host.interp.view for g in groups]
                return all(v is not None and len(v.members) == len(NODES) for v in views)

            await wait_for_change(full, [g.host for g in groups], timeout=30)
            stop = asyncio.Event()
            work = Workload(rate=0, size=size)
            tasks = [asyncio.create_task(_consume(g, LatencyLog())) for g in groups]
            tasks += [asyncio.create_task(_generate(g, work, stop)) for g in groups]
            try:
                await asyncio.sleep(1.0)  # warm-up: queues full, the ring at speed
                d0 = sum(g.host.interp.delivered for g in groups)
                c0, t0 = _cpu(), time.monotonic()
                await asyncio.sleep(seconds)
                d1 = sum(g.host.interp.delivered for g in groups)
                c1, t1 = _cpu(), time.monotonic()
            finally:
                stop.set()
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
    result: dict[str, Any] = {
        "size": size,
        "delivered_per_s_per_node": round((d1 - d0) / (t1 - t0) / len(NODES)),
        "deliveries_per_cpu_s": round((d1 - d0) / max(c1 - c0, 1e-9)),
        "cpu_share": round((c1 - c0) / (t1 - t0), 2),
    }
    if not udp_offload:
        result["udp_offload"] = False
    if security != "hmac":
        result["security"] = security
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, action="append")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-udp-offload", action="store_true")
    ap.add_argument("--security", default="hmac", choices=["hmac", "aes-gcm", "none"])
    args = ap.parse_args()
    tune_gc()
    for size in args.size or [100, 1000]:
        runs = []
        for _ in range(args.repeat):
            r = asyncio.run(_run(size, args.seconds, not args.no_udp_offload, args.security))
            runs.append(r)
            print(json.dumps(r), flush=True)
        if args.repeat > 1:
            med = dict(runs[0])
            for key in ("delivered_per_s_per_node", "deliveries_per_cpu_s", "cpu_share"):
                med[key] = statistics.median(r[key] for r in runs)
            print(json.dumps({"median_of": args.repeat, **med}), flush=True)


if __name__ == "__main__":
    main()
