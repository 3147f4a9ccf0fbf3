"""Does a freshly started local cluster hold its view, with a CPU burner on one core?

For each protocol and size: ``ringcast cluster up`` (the node processes on loopback,
as a user starts them), a busy loop in a process of its own for the whole run, no
fault for ``--hold`` seconds, then ``kill -9`` of the last node and ``--after``
seconds more; then ``cluster down`` and the runtime traces read. Reported per run:
the regular views each node installed before the kill (1 is right: one view of all),
whether they ended in one view of all, the views each survivor installed after the
kill (1 is right) and whether they ended in one view of the survivors.

    python bench/cluster_steady.py                       # every family, 3 and 5 nodes, 60 s
    python bench/cluster_steady.py --protocols totem --sizes 3 --hold 10 --after 5
    python bench/cluster_steady.py --no-gate --protocols raincore --set rto_max=10ms  # before

With ``--stop MS`` the second node is stopped (SIGSTOP, then SIGCONT) for MS
milliseconds ``--stops`` times, evenly spread over the quiet stretch: a process the
scheduler keeps off the CPU, made reproducible. Its peers must not drop it from the view:

    python bench/cluster_steady.py --protocols basic,gms,raincore --sizes 3 --hold 10 \
        --after 3 --no-burner --stop 300 --stops 5
    python bench/cluster_steady.py ... --set suspect_verify_timeout=0     # basic, gms before
    python bench/cluster_steady.py ... --set token_confirmations=0        # raincore before
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ringcast.protocols import registry
from ringcast.runtime.cluster import cluster_down, cluster_up, node_ids
from ringcast.runtime.config import load_config
from ringcast.runtime.steady import installed_views, judge

BURNER = "while True: pass"


def one(
    protocol: str,
    n: int,
    hold: float,
    after: float,
    burner: bool,
    gate: bool = True,
    settings: dict[str, object] | None = None,
    stop_ms: float = 0.0,
    stops: int = 0,
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="ringcast-steady-") as tmp:
        d = Path(tmp)
        burn = subprocess.Popen([sys.executable, "-c", BURNER]) if burner else None
        try:
            pids = cluster_up(d, nodes=n, protocol=protocol, gate=gate, settings=settings)
            origin = load_config(d / "cluster.toml").origin_ns
            if stop_ms > 0 and stops > 0:  # the second node off the CPU, now and then
                gap = hold / (stops + 1)
                for _ in range(stops):
                    time.sleep(max(0.0, gap - stop_ms / 1000))
                    os.kill(pids[node_ids(n)[1]], signal.SIGSTOP)
                    time.sleep(stop_ms / 1000)
                    os.kill(pids[node_ids(n)[1]], signal.SIGCONT)
                time.sleep(gap)
            else:
                time.sleep(hold)
            victim = node_ids(n)[-1]
            split = time.time_ns() - origin
            os.kill(pids[victim], signal.SIGKILL)
            time.sleep(after)
            until = time.time_ns() - origin
        finally:
            if (d / "pids.json").exists():
                cluster_down(d)
            if burn is not None:
                burn.kill()
                burn.wait()
        views = installed_views(d / "trace")
        v = judge(views, node_ids(n), split, victim, until)
        return {
            "protocol": protocol,
            "nodes": n,
            "start": v.start,
            "formed": v.formed,
            "after": v.after,
            "settled": v.settled,
            "ok": v.formed and v.settled and v.extra_at_start == 0 and v.extra_after == 0,
        }


def _value(text: str) -> object:
    """A ``--set`` value as the cluster file would hold it: an integer, true or false,
    or else the text (a duration such as ``10ms``)."""
    if text.lstrip("-").isdigit():
        return int(text)
    return {"true": True, "false": False}.get(text, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", default=",".join(registry.builtin_names()))
    ap.add_argument("--sizes", default="3,5")
    ap.add_argument("--hold", type=float, default=60.0, help="seconds without a fault")
    ap.add_argument("--after", type=float, default=15.0, help="seconds after the kill")
    ap.add_argument("--no-burner", action="store_true")
    ap.add_argument(
        "--no-gate", action="store_true", help="nodes join as they come up (before the gate)"
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a protocol setting"
    )
    ap.add_argument("--stop", type=float, default=0.0, metavar="MS", help="SIGSTOP n2 this long")
    ap.add_argument("--stops", type=int, default=5, help="how many times (with --stop)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    results = []
    print(
        "| protocol | nodes | views at start (per node) | one view of all"
        " | views after kill -9 (per survivor) | one view of the survivors |"
    )
    print("|---|---|---|---|---|---|")
    for p in a.protocols.split(","):
        for n in map(int, a.sizes.split(",")):
            settings = {k: _value(v) for k, v in (kv.split("=", 1) for kv in a.set)}
            r = one(
                p,
                n,
                a.hold,
                a.after,
                not a.no_burner,
                not a.no_gate,
                settings or None,
                a.stop,
                a.stops if a.stop > 0 else 0,
            )
            results.append(r)
            start = " ".join(str(c) for c in r["start"].values())  # type: ignore[attr-defined]
            after = " ".join(str(c) for c in r["after"].values())  # type: ignore[attr-defined]
            print(f"| {p} | {n} | {start} | {r['formed']} | {after} | {r['settled']} |", flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
