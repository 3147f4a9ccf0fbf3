"""Record one Tomcat Tribes member in ringcast's trace schema (run it in the node's
network namespace):

    python -m ringcast.references.tribes --name n1 --address 10.1.2.1 --port 4000 \\
        --trace-dir trace --state-dir state/n1 --run RUN --origin-ns NS [--rate 50]

It compiles the recorder at first use, runs it in a JVM and writes its events as
JSON-lines trace segments of protocol ``tomcat-tribes``. SIGTERM stops the member (it
leaves the group); the trace is complete when this exits.
"""

from __future__ import annotations

import sys

from ringcast.references.recording import arguments, fail, record
from ringcast.references.tribes import NAME, ReferenceUnavailable, build


def main(argv: list[str] | None = None) -> int:
    ap = arguments("python -m ringcast.references.tribes")
    ap.add_argument("--address", required=True, help="the member's address (its receiver's)")
    ap.add_argument("--port", type=int, default=4000)
    args = ap.parse_args(argv)
    try:
        java = build()
    except ReferenceUnavailable as e:
        return fail(str(e))
    cmd = [*java, args.name, args.address, str(args.port), str(args.rate), str(args.size)]
    cmd += [str(args.seconds), str(args.from_ns)]
    return record(args, NAME, cmd, "fifo")


if __name__ == "__main__":
    sys.exit(main())
