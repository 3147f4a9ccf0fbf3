"""Record one node of a corosync cluster in ringcast's trace schema (run it beside that
node's corosync, in its network namespace):

    python -m ringcast.references.corosync --name n1 --nodes 1=n1,2=n2,3=n3 \\
        --trace-dir trace --state-dir state/n1 --run RUN --origin-ns NS [--rate 50]

It builds the CPG recorder at first use, runs it (workload options as the recorder's)
and writes its events as JSON-lines trace segments of protocol ``corosync``. SIGTERM
makes the recorder leave the group; the trace is complete when this exits.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from ringcast.references.corosync import NAME, Recording, ReferenceUnavailable, build
from ringcast.runtime.log import node_logger, setup_logging
from ringcast.runtime.storage import StateStore
from ringcast.runtime.tracelog import TraceLog


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ringcast.references.corosync")
    ap.add_argument("--name", required=True, help="this node's name in the trace")
    ap.add_argument("--nodes", required=True, help="corosync node ids to names: 1=n1,2=n2")
    ap.add_argument("--trace-dir", type=Path, required=True)
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--origin-ns", type=int, required=True)
    ap.add_argument("--group", default="ringcast")
    ap.add_argument("--rate", type=float, default=50.0, help="multicasts a second (0: flat out)")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--count", type=int, default=-1, help="multicasts in all (-1: no limit)")
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--rotate", type=float, default=5.0, help="seconds a trace segment spans")
    args = ap.parse_args(argv)
    try:
        names = {int(k): v for k, v in (item.split("=", 1) for item in args.nodes.split(","))}
    except ValueError:
        ap.error(f"--nodes {args.nodes!r}: expected NODEID=NAME,...")
    try:
        exe = build()
    except ReferenceUnavailable as e:
        print(f"ringcast: {e}", file=sys.stderr)
        return 2
    store = StateStore(args.state_dir)
    boot = int(store.get("host.boots") or b"0") + 1
    store.put("host.boots", str(boot).encode())
    trace = TraceLog(
        args.trace_dir,
        run=args.run,
        node=args.name,
        fmt="jsonl",
        origin_ns=args.origin_ns,
        store=store,
        boot=boot,
        protocol=NAME,
        rotate_ns=int(args.rotate * 1e9),
    )
    setup_logging()
    log = node_logger(args.name)
    rec = Recording(
        trace.add,
        names,
        lambda view, members: log.info(
            "view installed", fields={"view": view, "members": members, "transitional": False}
        ),
        lambda count: log.info("delivered", fields={"delivered": count}),
    )
    cmd = [str(exe), "--name", args.name, "--group", args.group, "--rate", str(args.rate)]
    cmd += ["--size", str(args.size), "--count", str(args.count), "--seconds", str(args.seconds)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)

    def forward(signum: int, frame: FrameType | None) -> None:
        proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    assert proc.stdout is not None
    events = args.state_dir / f"cpg-events.{boot}.jsonl"  # what the recorder printed
    try:
        with open(events, "w") as raw:
            for line in proc.stdout:
                raw.write(line)
                rec.line(line)
                trace.tick()
    finally:
        proc.wait()
        trace.close()
    return 0 if rec.ended is not None else 1


if __name__ == "__main__":
    sys.exit(main())
