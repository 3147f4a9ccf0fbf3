"""``ringcast node | cluster up | cluster down | status | keygen``: the real runtime's commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ringcast.cli.main import CliError


def _load(path: Path) -> Any:
    from ringcast.runtime.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as e:
        raise CliError(str(e)) from None


def _cmd_node(args: argparse.Namespace) -> int:
    from ringcast.runtime.errors import GroupError
    from ringcast.runtime.node import Workload, run_forever, run_node

    cfg = _load(args.config)
    try:
        cfg.node(args.id)
    except GroupError as e:
        raise CliError(str(e)) from None
    if args.order not in ("agreed", "safe", "fifo"):
        raise CliError(f"--order: expected agreed, safe or fifo, got {args.order!r}")
    if args.rate is not None and args.rate < 0:
        raise CliError("--rate: must be 0 (as fast as flow control allows) or positive")
    wl = None
    if args.rate is not None:
        wl = Workload(args.rate, args.size, args.order, args.count, args.duration)
    try:
        run_forever(
            run_node(
                cfg,
                args.id,
                workload=wl,
                summary=args.summary,
                sched_rr=args.sched_rr,
                live_dir=args.live_dir,
                start_gate=args.start_gate,
            )
        )
    except GroupError as e:
        raise CliError(str(e)) from None
    except OSError as e:
        raise CliError(f"node {args.id}: {e}") from None
    return 0


def _cmd_cluster_up(args: argparse.Namespace) -> int:
    from ringcast.protocols import registry
    from ringcast.runtime.cluster import app_ids, cluster_up

    if not 1 <= args.nodes <= 64:
        raise CliError(f"--nodes: expected 1..64, got {args.nodes}")
    if not 0 <= args.app_members <= 64:
        raise CliError(f"--app-members: expected 0..64, got {args.app_members}")
    if args.protocol not in registry.names():
        raise CliError(
            f"--protocol: unknown protocol {args.protocol!r} (known: {', '.join(registry.names())})"
        )
    try:
        pids = cluster_up(
            args.dir, nodes=args.nodes, protocol=args.protocol, app_members=args.app_members
        )
    except RuntimeError as e:
        raise CliError(str(e)) from None
    out = {"dir": str(args.dir), "config": str(args.dir / "cluster.toml"), "pids": pids}
    if args.app_members:
        out["app_members"] = app_ids(args.app_members)
    print(json.dumps(out))
    return 0


def _cmd_cluster_down(args: argparse.Namespace) -> int:
    from ringcast.runtime.cluster import cluster_down

    try:
        result = cluster_down(args.dir)
    except RuntimeError as e:
        raise CliError(str(e)) from None
    print(json.dumps(result))
    return 0


def status_table(rows: list[dict[str, Any]]) -> str:
    """The ``ringcast status`` table: one line a node."""
    head = (
        "node",
        "view",
        "members",
        "state",
        "leader",
        "tokens/s",
        "delivered/s",
        "delivered",
        "drops",
    )
    lines = [head]
    for st in rows:
        if "error" in st:
            what = f"{st['error']}: {st['problem']}" if "problem" in st else st["error"]
            lines.append((st["node"], "-", "-", what, "-", "-", "-", "-", "-"))
            continue
        m = st["metrics"]
        v = st["view"] or {}
        state = st.get("state") or {}
        state_s = str(state.get("state", state.get("name", "up"))) if state else "up"
        nets = [f"{k[4:]} {v}" for k, v in sorted(state.items()) if k.startswith("rrp_net")]
        if nets:  # Totem's redundant ring: each network healthy or faulty
            state_s += " (" + ", ".join(nets) + ")"
        lines.append(
            (
                st["node"],
                str(v.get("id", "-")) + (" (trans)" if v.get("transitional") else ""),
                ",".join(v.get("members", [])),
                state_s,
                str(st.get("leader") or "-"),
                f"{m['rates']['tokens']:.1f}",
                f"{m['rates']['delivered']:.1f}",
                str(m["delivered"]),
                str(m["dropped"]),
            )
        )
    widths = [max(len(r[k]) for r in lines) for k in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines
    )


async def gather_status(cfg: Any, timeout: float = 1.0) -> list[dict[str, Any]]:
    """Every node's status, or in words what is wrong with it (see
    :mod:`ringcast.runtime.health`); the nodes are asked concurrently."""
    from ringcast.runtime.health import cluster_health

    return await cluster_health(cfg, timeout)


def _cmd_status(args: argparse.Namespace) -> int:
    from ringcast.runtime.health import is_down

    if not 0 < args.timeout <= 60:
        raise CliError(f"--timeout: expected seconds in (0, 60], got {args.timeout:g}")
    cfg = _load(args.config)
    rows = asyncio.run(gather_status(cfg, args.timeout))
    if args.json:
        print(json.dumps(rows, default=str))
    else:
        print(status_table(rows))
    down = [r["node"] for r in rows if is_down(r)]
    if down:
        if not args.json:
            print(f"{len(down)} of {len(rows)} nodes down: {', '.join(down)}", file=sys.stderr)
        return 1
    return 0


def _cmd_keygen(args: argparse.Namespace) -> int:
    from ringcast.runtime.security import KeyFileError, write_key_file

    try:
        path = write_key_file(args.out, force=args.force)
    except KeyFileError as e:
        raise CliError(str(e)) from None
    except OSError as e:
        raise CliError(f"{args.out}: {e.strerror}") from None
    print(f"wrote a 256-bit cluster key to {path} (mode 0600)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the runtime's sub-commands to the ``ringcast`` parser."""
    s = sub.add_parser("node", help="run one node of a cluster in the foreground")
    s.add_argument("--config", type=Path, required=True, help="cluster TOML file")
    s.add_argument("--id", required=True, help="this node's id in the cluster file")
    s.add_argument(
        "--rate",
        type=float,
        default=None,
        help="multicast load: messages a second (0 = as fast as flow control allows)",
    )
    s.add_argument("--size", type=int, default=100, help="load message size in bytes")
    s.add_argument("--order", default="agreed", help="agreed (default), safe or fifo")
    s.add_argument("--count", type=int, default=None, help="stop the load after this many")
    s.add_argument("--duration", type=float, default=None, help="stop the load after seconds")
    s.add_argument("--summary", type=Path, default=None, help="write a JSON summary here on exit")
    s.add_argument(
        "--sched-rr",
        action="store_true",
        help="realtime round-robin scheduling for this process, as corosync's sched_rr "
        "(needs CAP_SYS_NICE; a warning and ordinary scheduling without it)",
    )
    s.add_argument(
        "--live-dir",
        type=Path,
        default=None,
        help="as a node of a `ringcast live` run: wait at the start gate in this "
        "directory, run the workloads it holds for the node; SIGINT leaves the group, "
        "SIGTERM ends the run without leaving",
    )
    s.add_argument(
        "--start-gate",
        type=Path,
        default=None,
        metavar="DIR",
        help="join only when the gate in DIR opens (`cluster up` starts its nodes so, "
        "all at one instant): write DIR/ID.armed, wait for DIR/start",
    )
    s.set_defaults(func=_cmd_node)

    c = sub.add_parser("cluster", help="start or stop a local cluster of node processes")
    csub = c.add_subparsers(dest="cluster_command", metavar="ACTION")
    csub.required = True
    s = csub.add_parser("up", help="write a loopback cluster and start its nodes")
    s.add_argument("--nodes", type=int, default=3, help="node processes to start (n1, n2, ...)")
    s.add_argument("--protocol", default="totem")
    s.add_argument("--dir", type=Path, default=Path("ringcast-cluster"))
    s.add_argument(
        "--app-members",
        type=int,
        default=0,
        metavar="N",
        help="also write N nodes app1, app2, ... that it does not start, for applications "
        'to join as (Group.join("DIR/cluster.toml", "app1"))',
    )
    s.set_defaults(func=_cmd_cluster_up)
    s = csub.add_parser("down", help="stop the nodes started by `cluster up`")
    s.add_argument("--dir", type=Path, default=Path("ringcast-cluster"))
    s.set_defaults(func=_cmd_cluster_down)

    s = sub.add_parser(
        "status",
        help="print each node's view, state and rates, or what is wrong with it; "
        "exit 1 when a node is down",
    )
    s.add_argument("--config", type=Path, required=True)
    s.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    s.add_argument(
        "--timeout",
        type=float,
        default=1.0,
        help="seconds to wait for the nodes' answers (asked at once; default 1)",
    )
    s.set_defaults(func=_cmd_status)

    s = sub.add_parser("keygen", help="write a new cluster key file (mode 0600)")
    s.add_argument("out", type=Path, help="key file to write")
    s.add_argument("--force", action="store_true", help="replace an existing file")
    s.set_defaults(func=_cmd_keygen)
