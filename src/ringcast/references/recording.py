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
    ap.add_argument(
        "--mend",
        action="store_true",
        help="start nothing: add to each earlier life's trace the rows its recorder "
        "wrote and its wrapper, killed with it, did not read (after a live run)",
    )
    return ap


FOLLOW_S = 0.002
"""How often the wrapper looks for more of the recorder's events when it has none."""
BOOT_BLOCK = 10**9
"""A member's messages in its ``boot``-th life are numbered from
``(boot - 1) * BOOT_BLOCK + 1``."""


def _trace(
    args: argparse.Namespace, protocol: str, store: StateStore, boot: int, *, write_through: bool
) -> TraceLog:
    """The trace of life ``boot`` of node ``args.name`` (JSON-lines segments)."""
    return TraceLog(
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
        write_through=write_through,
    )


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run(
    args: argparse.Namespace,
    protocol: str,
    cmd: Sequence[str],
    make: MakeRecording,
    first: Callable[[int], Sequence[str]] = lambda k: [str(k)],
) -> int:
    """Run recorder ``cmd``, turning its output into the trace of node ``args.name``
    (JSON-lines segments of ``protocol``); its raw output kept in the state directory.
    ``first(k)``: the arguments that number the recorder's messages from ``k``.
    SIGINT (leave) and SIGTERM (stop) stop the recorder (the module's doc). 0 when it
    ended with ``end``."""
    if args.mend:
        mend(args, protocol, make)
        return 0
    store = StateStore(args.state_dir)
    boot = int(store.get("host.boots") or b"0") + 1
    store.put("host.boots", str(boot).encode())
    cmd = [*cmd, *first((boot - 1) * BOOT_BLOCK + 1)]
    trace = _trace(args, protocol, store, boot, write_through=args.write_through)
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


OnView = Callable[[str, list[str]], None]
MakeRecording = Callable[[Add, OnView, Callable[[int], None]], "Recording"]
"""Makes a system's :class:`Recording` from ``(add, on_view, on_delivered)``."""

WRAPPER_END = ("stats", "fault")
"""The kinds of the rows a wrapper writes last, when it saw its recorder's end."""


def mend(args: argparse.Namespace, protocol: str, make: MakeRecording) -> list[int]:
    """Complete the traces of a node's lives whose wrapper was killed with its recorder
    (``kill -9`` of the node's process group): the recorder's events file holds every
    line it wrote, the trace only those the wrapper had read. Each such life's events are
    turned into rows again, as the wrapper turns them, and the rows past those already in
    its trace are appended to it. A life whose trace ends with its wrapper's last row
    (it saw the recorder end) is left as it is. The lives mended, with rows added."""
    store = StateStore(args.state_dir)
    mended = []
    for events in sorted(args.state_dir.glob(f"{protocol}-events.*.jsonl")):
        boot = int(events.name.rsplit(".", 2)[1])
        path = args.trace_dir / f"{args.name}.{boot}.jsonl"
        written = _rows_of(path)
        if written and written[-1] in WRAPPER_END:
            continue
        rows: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

        def collect(*a: Any, _rows: list[Any] = rows, **kw: Any) -> None:
            _rows.append((a, kw))

        rec = make(collect, lambda v, m: None, lambda c: None)
        with open(events, "rb") as f:
            for line in f:
                if line.endswith(b"\n"):  # (a line cut by the kill is not an event)
                    rec.line(line.decode(errors="replace"))
        missing = rows[len(written) :]
        if not missing:
            continue
        trace = _trace(args, protocol, store, boot, write_through=True)
        try:
            for a, kw in missing:
                trace.add(*a, **kw)
            trace.spill()
        finally:
            trace.close()
        mended.append(boot)
    return mended


def _rows_of(path: Path) -> list[str]:
    """The kinds of the rows of one life's write-through trace, in order."""
    if not path.exists():
        return []
    kinds = []
    with open(path, "rb") as f:
        for line in f:
            with contextlib.suppress(json.JSONDecodeError):
                kinds.append(str(json.loads(line)["kind"]))
    return kinds


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
