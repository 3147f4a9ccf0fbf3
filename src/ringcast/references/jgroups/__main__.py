"""Record one JGroups member in ringcast's trace schema (run it in the node's network
namespace):

    python -m ringcast.references.jgroups --name n1 --address 10.1.2.1 \\
        --trace-dir trace --state-dir state/n1 --run RUN --origin-ns NS [--rate 50]

It compiles the recorder at first use, runs it in a JVM bound to ``--address``
(``jgroups.bind_addr``) and writes its events as JSON-lines trace segments of protocol
``jgroups``. SIGTERM closes the channel (it leaves the group); the trace is complete when
this exits.
"""

from __future__ import annotations

import sys

from ringcast.references.jgroups import NAME, ReferenceUnavailable, build
from ringcast.references.recording import arguments, fail, record


def main(argv: list[str] | None = None) -> int:
    ap = arguments("python -m ringcast.references.jgroups")
    ap.add_argument("--address", required=True, help="the address JGroups binds to")
    args = ap.parse_args(argv)
    try:
        java = build()
    except ReferenceUnavailable as e:
        return fail(str(e))
    cmd = [java[0], f"-Djgroups.bind_addr={args.address}", *java[1:]]
    cmd += [args.name, str(args.rate), str(args.size), str(args.seconds), str(args.from_ns)]
    return record(args, NAME, cmd, "fifo")


if __name__ == "__main__":
    sys.exit(main())
