"""Record one node of a corosync cluster in ringcast's trace schema (run it beside that
node's corosync, in its network namespace):

    python -m ringcast.references.corosync --name n1 --nodes 1=n1,2=n2,3=n3 \\
        --trace-dir trace --state-dir state/n1 --run RUN --origin-ns NS [--rate 50]

It builds the CPG recorder at first use, runs it and writes its events as JSON-lines
trace segments of protocol ``corosync`` (ringcast.references.recording). SIGTERM makes
the recorder leave the group; the trace is complete when this exits.
"""

from __future__ import annotations

import sys

from ringcast.references.corosync import NAME, CpgRecording, ReferenceUnavailable, build
from ringcast.references.recording import arguments, fail, run


def main(argv: list[str] | None = None) -> int:
    ap = arguments("python -m ringcast.references.corosync")
    ap.add_argument("--nodes", required=True, help="corosync node ids to names: 1=n1,2=n2")
    ap.add_argument("--group", default="ringcast")
    ap.add_argument("--count", type=int, default=-1, help="multicasts in all (-1: no limit)")
    args = ap.parse_args(argv)
    try:
        names = {int(k): v for k, v in (item.split("=", 1) for item in args.nodes.split(","))}
    except ValueError:
        ap.error(f"--nodes {args.nodes!r}: expected NODEID=NAME,...")
    try:
        exe = build()
    except ReferenceUnavailable as e:
        return fail(str(e))
    cmd = [str(exe), "--name", args.name, "--group", args.group, "--rate", str(args.rate)]
    cmd += ["--size", str(args.size), "--count", str(args.count), "--seconds", str(args.seconds)]
    cmd += ["--from-ns", str(args.from_ns)]
    return run(
        args,
        NAME,
        cmd,
        lambda add, on_view, on_delivered: CpgRecording(
            add, names, on_view=on_view, on_delivered=on_delivered
        ),
        first=lambda k: ["--first", str(k)],
    )


if __name__ == "__main__":
    sys.exit(main())
