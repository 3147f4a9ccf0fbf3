"""One member of a reference system as a live run's node (:mod:`ringcast.references.live`):

    python -m ringcast.references.member --setup _live/system.json --node n1 \\
        --live-dir _live/gate/n1.1

Run by the live driver in the node's network namespace, in a process group of its own.
It waits at the node's gate (``<node>.armed``, then ``<node>.start``, as a ``ringcast
node --live-dir`` does), starts what the reference runs beside its recorder on the node
(corosync's daemon, with its own ``/run`` and ``/var/lib/corosync`` under the node's
state directory), then records the member with the workload the driver planned for it,
until SIGTERM (the run is over: it stops where it stands) or SIGINT (it leaves the
group). What it started stops with it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ringcast.live.netns import IP
from ringcast.references.live import Setup, member, workload
from ringcast.runtime.liverun import GATE_POLL_S, read_plans, write_atomic

DAEMON_STOP_S = 10.0


def wait_at_gate(live_dir: Path, node: str) -> int:
    """Say the node is armed, wait for its start file and instant; the run's origin."""
    write_atomic(live_dir / f"{node}.armed", {"pid": os.getpid(), "t": time.monotonic_ns()})
    start_file = live_dir / f"{node}.start"
    while not start_file.exists():
        time.sleep(GATE_POLL_S)
    doc = json.loads(start_file.read_text())
    wait = (int(doc["start_ns"]) - time.monotonic_ns()) / 1e9
    if wait > 0:
        time.sleep(wait)
    return int(doc["origin_ns"])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(DAEMON_STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ringcast.references.member")
    ap.add_argument("--setup", type=Path, required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--live-dir", type=Path, required=True)
    args = ap.parse_args(argv)
    setup = Setup.read(args.setup)
    m = member(setup.system)
    node = args.node
    origin = wait_at_gate(args.live_dir, node)
    state = Path(setup.state_root) / node
    state.mkdir(parents=True, exist_ok=True)
    if m.multicast_route:  # the membership's multicast goes out on the run's network
        subprocess.run(
            [IP, "route", "replace", "224.0.0.0/4", "dev", "eth0"], check=True, timeout=10
        )
    daemon = None
    # SIGTERM before the recorder runs: stop what was started (the recorder's wrapper
    # handles SIGTERM and SIGINT itself from the moment it runs)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    try:
        cmd = m.daemon(node, setup, state)
        if cmd is not None:
            with open(state / "daemon.log", "ab") as log:
                daemon = subprocess.Popen(
                    list(cmd), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
        wl = workload(read_plans(args.live_dir, node), origin)
        rec = [
            "--name",
            node,
            "--trace-dir",
            setup.trace_dir,
            "--state-dir",
            str(state),
            "--run",
            setup.run,
            "--origin-ns",
            str(origin),
            "--origin-clock",
            "monotonic",
            "--write-through",
            *wl.arguments(),
            *m.arguments(node, setup),
        ]
        main_of = importlib.import_module(m.module + ".__main__").main
        code: int = main_of(rec)
        return code
    finally:
        if daemon is not None:
            with contextlib.suppress(Exception):
                _stop(daemon)


if __name__ == "__main__":
    sys.exit(main())
