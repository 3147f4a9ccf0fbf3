"""A local cluster of OS processes on loopback: ``ringcast cluster up`` and ``down``.

``up`` writes a cluster file, a key and a ``pids.json`` into a directory, picks free
loopback ports, and starts one ``ringcast node`` process a node (logs in
``logs/<id>.log``). With ``app_members`` it also writes that many nodes ``app1``,
``app2``, ... that it does not start, marked ``join = true`` (not in the initial group):
the places for applications, which join with ``Group.join(file, "app1")``. The nodes
wait at a start gate until every one of them is up, then join at one instant, so that
the first ring forms with all of them. It returns once every node it started is ready
(its status endpoint listens). ``down``
sends SIGTERM to each (the node leaves the group cleanly), waits, and kills what is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ringcast.runtime.config import render_config
from ringcast.runtime.security import write_key_file

PIDS = "pids.json"
CONFIG = "cluster.toml"
READY_TIMEOUT_S = 30.0
"""How long ``cluster up`` waits for its nodes' status endpoints."""
GATE = "gate"
"""The start gate's directory (``ringcast node --start-gate``)."""
GATE_LEAD_S = 0.05
"""How far ahead of the moment the last node armed the gate opens: time for every node,
polling every 2 ms, to see it before the instant it names."""


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """An ephemeral loopback port free right now (of the given socket type)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def distinct_port(taken: set[int], kind: int = socket.SOCK_DGRAM) -> int:
    """A port from :func:`free_port` that is not in ``taken`` (then added to it): the
    kernel may hand out a port again once its probe socket is closed, and two nodes of
    one cluster file on one port is a configuration error."""
    while True:
        port = free_port(kind)
        if port not in taken:
            taken.add(port)
            return port


def node_ids(n: int) -> list[str]:
    return [f"n{k}" for k in range(1, n + 1)]


def app_ids(n: int) -> list[str]:
    """The ids of the application members ``cluster up`` writes and does not start."""
    return [f"app{k}" for k in range(1, n + 1)]


def write_cluster(
    directory: Path,
    *,
    nodes: int,
    protocol: str,
    name: str = "local",
    settings: Mapping[str, Any] | None = None,
    security: str = "hmac",
    trace_format: str = "parquet",
    networks: int = 1,
    trace_rotate: str | None = None,
    trace: bool = True,
    app_members: int = 0,
) -> Path:
    """Write ``cluster.toml`` and ``cluster.key`` for ``nodes`` loopback nodes and
    ``app_members`` joining ones for applications (no status address); return the file."""
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "cluster.key"
    if not key.exists():
        write_key_file(key)
    taken: set[int] = set()  # (UDP and TCP ports alike: a status port is a node's too)
    entries: list[tuple[str, list[str], str | None]] = [
        (
            nid,
            [f"127.0.0.1:{distinct_port(taken)}" for _ in range(networks)],
            f"127.0.0.1:{distinct_port(taken, socket.SOCK_STREAM)}",
        )
        for nid in node_ids(nodes)
    ]
    apps = app_ids(app_members)
    entries += [
        (nid, [f"127.0.0.1:{distinct_port(taken)}" for _ in range(networks)], None) for nid in apps
    ]
    start = time.time_ns()
    text = render_config(
        name=name,
        protocol=protocol,
        nodes=entries,
        settings=settings,
        security=security,
        trace_format=trace_format,
        run_id=f"{name}:{start}",
        origin_ns=start,
        trace_rotate=trace_rotate,
        trace=trace,
        joining=apps,
    )
    path = directory / CONFIG
    path.write_text(text)
    return path


def spawn_node(
    config: Path, node_id: str, log_dir: Path, extra: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``ringcast node`` for ``node_id`` as a child process in its own session."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"{node_id}.log", "ab")  # noqa: SIM115 - owned by the child
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ringcast.cli.main",
                "node",
                "--config",
                str(config),
                "--id",
                node_id,
                *(extra or []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        log.close()


def cluster_up(
    directory: Path,
    *,
    nodes: int,
    protocol: str,
    extra: list[str] | None = None,
    app_members: int = 0,
    ready_timeout: float = READY_TIMEOUT_S,
    gate: bool = True,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Write the cluster (with protocol ``settings``) and start its processes (not the
    ``app_members``) behind the start gate (``gate`` false: each joins as soon as it is
    up, for comparison), and wait until each is ready (:func:`await_ready`;
    ``ready_timeout`` 0: do not wait for that, only for the gate, up to
    :data:`READY_TIMEOUT_S`); return ``{node_id: pid}``."""
    if (directory / PIDS).exists() and any(pid_alive(p) for p in read_pids(directory).values()):
        raise RuntimeError(f"{directory}: a cluster is running there (ringcast cluster down first)")
    config = write_cluster(
        directory, nodes=nodes, protocol=protocol, app_members=app_members, settings=settings
    )
    gate_dir = directory / GATE
    shutil.rmtree(gate_dir, ignore_errors=True)
    args = [*(extra or []), *(["--start-gate", str(gate_dir)] if gate else [])]
    procs = {nid: spawn_node(config, nid, directory / "logs", args) for nid in node_ids(nodes)}
    pids = {nid: p.pid for nid, p in procs.items()}
    (directory / PIDS).write_text(json.dumps(pids, indent=1))
    if gate:
        open_gate(gate_dir, procs, directory / "logs", ready_timeout or READY_TIMEOUT_S)
    if ready_timeout:
        await_ready(config, procs, directory / "logs", ready_timeout)
    return pids


def open_gate(
    gate: Path, procs: Mapping[str, subprocess.Popen[bytes]], log_dir: Path, timeout: float
) -> None:
    """Once every node of ``procs`` is armed at the start gate (its process up, its
    modules loaded), open it for all of them at one instant :data:`GATE_LEAD_S` ahead.
    ``RuntimeError`` naming a node that exited or did not arm within ``timeout``."""
    deadline = time.monotonic() + timeout
    waiting = set(procs)
    while waiting:
        for nid in sorted(waiting):
            code = procs[nid].poll()
            if code is not None:
                raise _exited(nid, code, log_dir)
            if (gate / f"{nid}.armed").exists():
                waiting.discard(nid)
        if waiting and time.monotonic() > deadline:
            raise RuntimeError(
                f"node {', '.join(sorted(waiting))} not started within {timeout:g} s "
                f"(see {log_dir}); `ringcast cluster down` stops the cluster"
            )
        if waiting:
            time.sleep(0.01)
    start_ns = time.monotonic_ns() + int(GATE_LEAD_S * 1e9)
    tmp = gate / ".start.tmp"
    tmp.write_text(json.dumps({"start_ns": start_ns}))
    tmp.replace(gate / "start")


def _exited(nid: str, code: int, log_dir: Path) -> RuntimeError:
    """A node that exited while the cluster started, with the last line of its log."""
    return RuntimeError(
        f"node {nid} exited with {code} at start: {_last_line(log_dir / f'{nid}.log')} "
        "(`ringcast cluster down` stops the others)"
    )


def await_ready(
    config: Path, procs: Mapping[str, subprocess.Popen[bytes]], log_dir: Path, timeout: float
) -> None:
    """Return once every node's status endpoint accepts connections (``ringcast node``
    opens it when it is ready), so that ``ringcast status`` right after ``cluster up``
    finds the nodes up. ``RuntimeError`` naming a node that exited (with the last line
    of its log) or is not ready within ``timeout`` seconds; the others keep running."""
    from ringcast.runtime.config import load_config

    cfg = load_config(config)
    waiting = {nid: cfg.node(nid).status for nid in procs}
    deadline = time.monotonic() + timeout
    while waiting:
        for nid, addr in list(waiting.items()):
            code = procs[nid].poll()
            if code is not None:
                raise _exited(nid, code, log_dir)
            if addr is None or _listens(addr):
                del waiting[nid]
        if waiting and time.monotonic() > deadline:
            raise RuntimeError(
                f"node {', '.join(sorted(waiting))} not ready within {timeout:g} s "
                f"(see {log_dir}); `ringcast cluster down` stops the cluster"
            )
        if waiting:
            time.sleep(0.05)


def _listens(addr: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(addr, timeout=0.5):
            return True
    except OSError:
        return False


def _last_line(log: Path) -> str:
    """The message of a log file's last line (a JSON record's ``msg``, else the line)."""
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    if not lines:
        return "(empty log)"
    try:
        rec = json.loads(lines[-1])
        return str(rec.get("msg", lines[-1])) if isinstance(rec, dict) else lines[-1]
    except ValueError:
        return lines[-1]


def read_pids(directory: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads((directory / PIDS).read_text()).items()}
    except FileNotFoundError:
        raise RuntimeError(f"{directory}: no {PIDS} (no cluster started there)") from None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user's counts; a zombie child of
    ours does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def cluster_down(directory: Path, *, timeout: float = 10.0) -> dict[str, str]:
    """SIGTERM every node of the cluster, SIGKILL those still running after ``timeout``."""
    pids = read_pids(directory)
    result: dict[str, str] = {}
    for nid, pid in pids.items():
        try:
            os.kill(pid, signal.SIGTERM)
            result[nid] = "stopped"
        except ProcessLookupError:
            result[nid] = "not running"
    deadline = time.monotonic() + timeout
    for nid, pid in pids.items():
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            result[nid] = "killed"
    (directory / PIDS).unlink(missing_ok=True)
    return result
