"""What every reference system's recorder shares: its output (one JSON object a line,
``k`` the kind, ``t`` CLOCK_MONOTONIC nanoseconds) turned into trace rows, and the
wrapper that runs a recorder beside one node and writes its trace segments.

The kinds a recorder prints: ``view`` (``view`` id, ``members`` by name, optionally
``coordinator``; a member or coordinator it cannot name is null: the trace's members are
nodes, each once, the unnamed left out, and no ``leader`` row for an unnamed
coordinator), ``submit`` and ``deliver`` (``msg`` id ``node:counter``, ``size``),
``end`` (``why``: ``stopped`` when it was told to stop, anything else when its system
went away). A recorder that dies without an ``end`` (``kill -9``) is taken for a crash
at the moment its output ended.

As a ringcast node: SIGINT makes the member leave the group (a ``fault`` row
``leave``, then a ``stats`` row), SIGTERM stops it where it stands (a ``stats`` row
only: the clean stop the lab tells from a kill). A member restarted on the same state
directory numbers its messages past its earlier lives' (from ``(boot - 1) * 10**9 + 1``),
so that a message id names one message, as the runtime's persisted counter does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from ringcast.runtime.log import node_logger, setup_logging
from ringcast.runtime.storage import StateStore
from ringcast.runtime.tracelog import TraceLog

Add = Callable[..., None]


class Recording:
    """Turns a recorder's lines into trace rows through ``add(t, kind, **columns)`` (a
    :class:`~ringcast.runtime.tracelog.TraceLog`'s); ``order`` is the delivery order the
    system gives (``agreed``, ``fifo``)."""

    def __init__(
        self,
        add: Add,
        order: str,
        on_view: Callable[[str, list[str]], None] | None = None,
        on_delivered: Callable[[int], None] | None = None,
    ):
        self.add = add
        self.order = order
        self.on_view = on_view
        """Told ``(view id, members)`` of each configuration (the wrapper logs it)."""
        self.on_delivered = on_delivered
        """Told the count of deliveries every 50 (the wrapper logs it)."""
        self.ended: str | None = None
        self.leaving = False
        """Told to leave the group (SIGINT), not only to stop (SIGTERM)."""
        self.counts = {"submit": 0, "deliver": 0, "view": 0}

    def line(self, text: str) -> None:
        try:
            ev = json.loads(text)
        except json.JSONDecodeError:
            return  # (a line cut by a kill)
        if isinstance(ev, dict) and "k" in ev and "t" in ev:
            self.event(str(ev["k"]), int(ev["t"]), ev)

    def event(self, k: str, t: int, ev: dict[str, Any]) -> None:
        if self.ended is not None:
            return  # (a member that left may still see its own group shrink to itself)
        if k == "view":
            # a member is a node: one name once, and a member the recorder could not name
            # (an earlier life of a node, never heard from here) left out
            members = list(dict.fromkeys(str(m) for m in ev["members"] if m is not None))
            self.view(t, str(ev["view"]), members, ev.get("coordinator"))
        elif k in ("submit", "deliver"):
            self.add(t, k, ev["msg"], self.order, size=int(ev["size"]))
            self.counts[k] += 1
            if k == "deliver" and self.on_delivered is not None and self.counts[k] % 50 == 0:
                self.on_delivered(self.counts[k])
        elif k == "end":
            self.end(t, str(ev.get("why")))

    def view(self, t: int, view: str, members: list[str], coordinator: Any = None) -> None:
        self.add(t, "view", view=view, members=members, transitional=False)
        if coordinator is not None:
            self.add(t, "leader", view=view, detail=json.dumps({"leader": str(coordinator)}))
        self.counts["view"] += 1
        if self.on_view is not None:
            self.on_view(view, members)

    def end(self, t: int, why: str) -> None:
        if self.ended is not None:
            return
        self.ended = why
        if why == "stopped":  # told to: it left the group, or stopped where it stood
            if self.leaving:
                self.add(t, "fault", detail=json.dumps({"action": "leave"}))
            stats = {"submitted": self.counts["submit"], "delivered": self.counts["deliver"]}
            self.add(t, "stats", detail=json.dumps({**stats, "views": self.counts["view"]}))
        else:  # its system went away under it: a crash of the node
            self.add(t, "fault", detail=json.dumps({"action": "crash", "why": why}))


def arguments(prog: str) -> argparse.ArgumentParser:
    """The options every recorder wrapper takes."""
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--name", required=True, help="this node's name in the trace")
    ap.add_argument("--trace-dir", type=Path, required=True)
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--origin-ns", type=int, required=True)
    ap.add_argument("--rate", type=float, default=50.0, help="multicasts a second (0: flat out)")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=3600.0, help="how long it sends")
    ap.add_argument(
        "--from-ns",
        type=int,
        default=0,
        help="the CLOCK_MONOTONIC instant it starts sending (0: at once)",
    )
    ap.add_argument("--rotate", type=float, default=5.0, help="seconds a trace segment spans")
    ap.add_argument(
        "--origin-clock",
        choices=("wall", "monotonic"),
        default="wall",
        help="the clock --origin-ns is read on (monotonic: processes of one machine)",
    )
    ap.add_argument(
        "--write-through",
        action="store_true",
        help="hand each row to the kernel as it comes (a live run: a kill loses no row)",
    )
    return ap


FOLLOW_S = 0.002
"""How often the wrapper looks for more of the recorder's events when it has none."""
BOOT_BLOCK = 10**9
"""A member's messages in its ``boot``-th life are numbered from
``(boot - 1) * BOOT_BLOCK + 1``."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run(
    args: argparse.Namespace,
    protocol: str,
    cmd: Sequence[str],
    make: Callable[[Add, Callable[[str, list[str]], None], Callable[[int], None]], Recording],
    first: Callable[[int], Sequence[str]] = lambda k: [str(k)],
) -> int:
    """Run recorder ``cmd``, turning its output into the trace of node ``args.name``
    (JSON-lines segments of ``protocol``); its raw output kept in the state directory.
    ``first(k)``: the arguments that number the recorder's messages from ``k``.
    SIGINT (leave) and SIGTERM (stop) stop the recorder (the module's doc). 0 when it
    ended with ``end``."""
    store = StateStore(args.state_dir)
    boot = int(store.get("host.boots") or b"0") + 1
    store.put("host.boots", str(boot).encode())
    cmd = [*cmd, *first((boot - 1) * BOOT_BLOCK + 1)]
    trace = TraceLog(
        args.trace_dir,
        run=args.run,
        node=args.name,
        fmt="jsonl",
        origin_ns=args.origin_ns,
        store=store,
        boot=boot,
        protocol=protocol,
        rotate_ns=int(args.rotate * 1e9),
        origin_clock=args.origin_clock,
        write_through=args.write_through,
    )
    setup_logging()
    log = node_logger(args.name)
    rec = make(
        trace.add,
        lambda view, members: log.info(
            "view installed", fields={"view": view, "members": members, "transitional": False}
        ),
        lambda count: log.info("delivered", fields={"delivered": count}),
    )
    # The recorder writes its events into a file of the state directory (kept), which
    # this follows: a recorder never waits on its reader (through a pipe, at saturation,
    # it would, and its system would be measured at this wrapper's pace)
    events = args.state_dir / f"{protocol}-events.{boot}.jsonl"
    with open(events, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, preexec_fn=_die_with_parent)

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            rec.leaving = True
        proc.send_signal(signal.SIGTERM)

    before = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with open(events, "rb") as follow:
            rest = b""
            while True:
                ended = proc.poll() is not None  # (read after: nothing written is missed)
                chunk = follow.read(1 << 20)
                if chunk:
                    lines = (rest + chunk).split(b"\n")
                    rest = lines.pop()
                    for line in lines:
                        rec.line(line.decode(errors="replace"))
                    if args.write_through:
                        trace.spill()  # the batch's rows in one write
                    else:
                        trace.tick()
                elif ended:
                    break
                else:
                    time.sleep(FOLLOW_S)
        if rec.ended is None:  # killed: the node crashed when its output ended
            rec.end(time.monotonic_ns(), f"recorder ended with status {proc.wait()}")
    finally:
        proc.wait()
        trace.close()
        for sig, handler in before.items():
            signal.signal(sig, handler)
    log.info("recorder ended", fields={"why": rec.ended})
    return 0 if rec.ended == "stopped" else 1


def fail(message: str) -> int:
    print(f"ringcast: {message}", file=sys.stderr)
    return 2


def record(args: argparse.Namespace, protocol: str, cmd: Sequence[str], order: str) -> int:
    """:func:`run` with a plain :class:`Recording` of delivery ``order`` (a recorder that
    names its views itself)."""
    return run(
        args,
        protocol,
        cmd,
        lambda add, on_view, on_delivered: Recording(
            add, order, on_view=on_view, on_delivered=on_delivered
        ),
    )
