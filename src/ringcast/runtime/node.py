"""Running one node in the foreground: the body of ``ringcast node``.

The node joins, optionally runs a load generator (multicasting ``size``-byte messages
at ``rate`` per second, or as fast as flow control allows when ``rate`` is 0),
serves its status endpoint, and leaves the group cleanly on SIGTERM or SIGINT. With
``summary`` it writes a JSON summary (counters, latency of its own messages from
submit to local delivery) when it stops.

As a node of a live run (``live_dir``, :mod:`ringcast.runtime.liverun`) it waits at the
start gate, runs the scenario's workloads for it, leaves the group on SIGINT (the
scenario's ``leave``) and on SIGTERM stops without leaving, as the simulator's nodes
stop at the end of a run (its trace written out, the others none the wiser).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ringcast.runtime.config import ClusterConfig
from ringcast.runtime.group import Delivery, Group
from ringcast.runtime.log import setup_logging
from ringcast.runtime.status import StatusServer

_STAMP = struct.Struct("!8sQ")
_MAGIC = b"rcload\x00\x01"


@dataclass(frozen=True)
class Workload:
    rate: float = 0.0  # messages a second; 0 = as fast as flow control allows
    size: int = 100
    order: str = "agreed"
    count: int | None = None
    duration: float | None = None


class LatencyLog:
    """Latencies (ns) of this node's own load messages, submit to local delivery."""

    def __init__(self, limit: int = 1_000_000):
        self.samples: list[int] = []
        self.limit = limit

    def add(self, ns: int) -> None:
        if len(self.samples) < self.limit:
            self.samples.append(ns)

    def percentiles(self) -> dict[str, float | None]:
        s = sorted(self.samples)
        if not s:
            return {"p50_ms": None, "p99_ms": None, "n": 0}
        return {
            "p50_ms": s[len(s) // 2] / 1e6,
            "p99_ms": s[min(len(s) - 1, int(len(s) * 0.99))] / 1e6,
            "n": len(s),
        }


def load_payload(size: int) -> bytes:
    stamp = _STAMP.pack(_MAGIC, time.monotonic_ns())
    return stamp + b"." * max(0, size - len(stamp)) if size >= len(stamp) else stamp[:size]


def stamp_of(payload: bytes) -> int | None:
    """The submit time a :func:`load_payload` carries; None for another payload or one
    too short to hold its stamp (a ``size`` under 16 keeps only a prefix)."""
    if len(payload) < _STAMP.size or payload[:8] != _MAGIC:
        return None
    return int(_STAMP.unpack_from(payload)[1])


BURST = 64
"""Messages the unpaced load generator submits per turn of the event loop."""


async def _generate(g: Group, wl: Workload, stop: asyncio.Event) -> None:
    sent = 0
    t0 = time.monotonic()
    size, order = wl.size, wl.order
    while not stop.is_set():
        if wl.count is not None and sent >= wl.count:
            return
        if wl.duration is not None and time.monotonic() - t0 >= wl.duration:
            return
        if wl.rate > 0:
            await g.multicast(load_payload(size), order)
            sent += 1
            delay = t0 + sent / wl.rate - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
        else:
            # As fast as flow control allows: a burst a loop turn, each payload
            # stamped just before its submit.
            n = BURST if wl.count is None else min(BURST, wl.count - sent)
            await g.multicast_many((load_payload(size) for _ in range(n)), order)
            sent += n


async def _consume(g: Group, lat: LatencyLog) -> None:
    me = g.node_id
    async for batch in g.batches():
        now = time.monotonic_ns()
        for ev in batch:
            if type(ev) is Delivery and ev.sender == me:
                sent = stamp_of(ev.payload)
                if sent is not None:
                    lat.add(now - sent)


async def run_node(
    config: ClusterConfig,
    node_id: str,
    *,
    workload: Workload | None = None,
    summary: Path | None = None,
    sched_rr: bool = False,
    live_dir: Path | None = None,
) -> dict[str, Any]:
    """Run ``node_id`` until SIGTERM/SIGINT (or the workload's end with ``summary``);
    ``sched_rr``: with realtime scheduling (:func:`set_sched_rr`), or a warning why not;
    ``live_dir``: as a node of a live run (see the module's docstring)."""
    from ringcast.runtime.liverun import pass_gate, read_plans, run_planned

    setup_logging(config.log_level)
    refused = set_sched_rr() if sched_rr else None
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    leave = True
    if live_dir is None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    else:

        def end_run() -> None:
            nonlocal leave
            leave = False
            stop.set()

        loop.add_signal_handler(signal.SIGINT, stop.set)
        loop.add_signal_handler(signal.SIGTERM, end_run)
    lat = LatencyLog()
    tune_gc()
    plans = []
    if live_dir is not None:
        plans = read_plans(live_dir, node_id)
        gate = asyncio.create_task(pass_gate(config, node_id, live_dir))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait((gate, stopped), return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not gate.done():  # the run ended before this node's start
            gate.cancel()
            return {"node": node_id, "started": False}
        config = gate.result()
    # Not waiting for the first view: the status endpoint answers (and "node ready" is
    # logged) as soon as the sockets are open, view or not.
    async with Group.join(config, node_id, wait_view=False) as g:
        g.subscribe()
        status = g.host.node.status
        status_srv = None
        if status is not None:
            status_srv = StatusServer(status, lambda: _status(g, lat), changed=g.host.changed)
            await status_srv.start()
        if refused is not None:
            g.host.log.warning("realtime scheduling refused", fields={"reason": refused})
        g.host.log.info(
            "node ready",
            fields={
                "status": None if status is None else "{}:{}".format(*status),
                "sched_rr": sched_rr and refused is None,
            },
        )
        consumer = asyncio.create_task(_consume(g, lat))
        gens = [asyncio.create_task(_generate(g, workload, stop))] if workload else []
        gens += [
            asyncio.create_task(run_planned(g, p, config.origin_ns, load_payload)) for p in plans
        ]
        await stop.wait()
        for gen in gens:
            gen.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await gen
        if status_srv is not None:
            await status_srv.close()
        result = _status(g, lat)
        if not leave:
            await g.close()
    consumer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consumer
    if summary is not None:
        tmp = summary.with_name(f".{summary.name}.tmp")
        tmp.write_text(json.dumps(result, default=str, indent=1))
        tmp.replace(summary)
    return result


def _status(g: Group, lat: LatencyLog) -> dict[str, Any]:
    st = g.host.status()
    st["latency"] = lat.percentiles()
    st["events_lost"] = g.events_lost
    try:
        import resource

        ru = resource.getrusage(resource.RUSAGE_SELF)
        st["max_rss_kb"] = ru.ru_maxrss
        st["cpu_s"] = round(ru.ru_utime + ru.ru_stime, 6)
    except ImportError:  # pragma: no cover - not on Linux
        pass
    return st


def set_sched_rr() -> str | None:
    """Give this process round-robin realtime scheduling at the highest priority, as
    corosync does by default (its ``system.sched_rr``); return why not, or None.

    For a node process that does nothing else (``ringcast node --sched-rr``): a node
    waiting for the token is then not kept off the CPU by ordinary processes, which on a
    busy machine decides whether it answers in time. It needs the privilege to
    (``CAP_SYS_NICE``); the kernel keeps a share of each second for ordinary processes
    (``sched_rt_runtime_us``).
    """
    if not hasattr(os, "sched_setscheduler"):
        return "this platform has no sched_setscheduler"
    try:
        prio = os.sched_get_priority_max(os.SCHED_RR)
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(prio))
    except OSError as e:
        return e.strerror or str(e)
    return None


GC_THRESHOLDS = (20_000, 50, 100)


def tune_gc() -> None:
    """Make the cyclic garbage collector cheap for a node process.

    A busy node allocates some 10^5 short-lived objects a second (frames, chunks,
    deliveries), which with the default threshold (700) runs a young collection every
    few hundred microseconds and a full one every few hundred milliseconds over every
    object of the process, imported modules included. The objects that exist now are
    moved to the permanent generation (``gc.freeze``) and the thresholds are raised.
    Measured in ``docs/benchmarks.md`` ("What changed in the runtime").
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_forever(coro: Any) -> Any:
    """Run ``coro`` on uvloop when it is installed, else on the default asyncio loop."""
    try:
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
