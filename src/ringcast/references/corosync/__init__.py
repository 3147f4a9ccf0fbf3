"""corosync as a reference system: its closed process groups (CPG) recorded in ringcast's
trace schema, so that the lab checks corosync's histories with the checks it holds
ringcast's Totem to.

corosync (Debian's package) implements the Totem single-ring protocol of the Totem
paper (Amir et al.) with extended virtual synchrony; CPG is its group messaging API
(``cpg.h``). What it claims, and the lab holds its traces to (:data:`SPEC`): agreed
total order within a configuration, virtual synchrony, integrity and FIFO order per
sender.

The recorder is a small CPG client written for ringcast (``cpg_recorder.c`` beside this
file; nothing of corosync's code), built with the system's C compiler against
``libcpg-dev`` at first use into a cache (:func:`build`). :func:`record` runs it on one
node, beside that node's corosync, and turns what it prints into trace rows:

* ``view``: each configuration of the group, named by the node map (``1`` -> ``n1``),
  never transitional. CPG gives a group's configuration no id of its own: a process
  joining or leaving the group changes it within one totem ring. Its id here is the
  totem ring id it belongs to (``NODEID.SEQ``, the same at every member) and the member
  node ids, which is what identifies it; so view agreement holds by construction and
  is not claimed. CPG tells a configuration that a new ring brings before it tells the
  ring (``cpg_totem_confchg_fn`` follows ``cpg_confchg_fn``), so a configuration is
  held until the next event: a ring names it, anything else leaves it in the ring in
  force;
* ``submit`` / ``deliver``: each multicast (agreed order) and each delivery, the
  message id ``node:counter`` carried in the payload;
* ``fault`` ``{"action":"stopped"}`` when the recorder ends on its own (its corosync
  went away), so that the lab judges the node crashed there.

:func:`corosync_conf` writes one node's ``corosync.conf`` (udpu or knet, the token and
consensus timeouts given).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ringcast.references.install import (
    ReferenceUnavailable,
    apt_install,
    cache_dir,
    reference_spec,
)
from ringcast.references.live import Member, Setup
from ringcast.references.recording import Recording
from ringcast.sim.scenario import Scenario

__all__ = [
    "MEMBER",
    "NAME",
    "SPEC",
    "CpgRecording",
    "ReferenceUnavailable",
    "build",
    "corosync_conf",
]

NAME = "corosync"
SOURCE = Path(__file__).with_name("cpg_recorder.c")


TOKEN_NS = 1_000_000_000
"""corosync's default token timeout: the failure-detection timeout convergence is
bounded in (a live run of a Totem scenario gives corosync Totem's, shorter)."""


SPEC = reference_spec(
    NAME,
    "corosync's closed process groups (CPG), recorded by ringcast's CPG client",
    {"total_order", "integrity", "fifo", "virtual_synchrony", "view_agreement", "convergence"},
    order_scope="view",
    total_orders=("agreed",),
    converge_on="members",
    timeout=lambda settings: TOKEN_NS,
)
"""What the lab holds corosync's traces to (looked up by ``protocol = "corosync"``)."""


def ensure_installed() -> None:
    """Install Debian's corosync and libcpg-dev (and a C compiler) when missing, as root."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if shutil.which("corosync") and Path("/usr/include/corosync/cpg.h").exists() and compiler:
        return
    apt_install(["corosync", "libcpg4", "libcpg-dev", "gcc", "libc6-dev"], "corosync")


def build(cache: Path | None = None) -> Path:
    """The recorder's executable, compiled at first use (and again when its source
    changes) into ``cache`` (default: ``$XDG_CACHE_HOME/ringcast`` or ``~/.cache``)."""
    ensure_installed()
    source = SOURCE.read_bytes()
    tag = hashlib.sha256(source).hexdigest()[:12]
    base = cache or cache_dir()
    exe = base / f"cpg_recorder-{tag}"
    if exe.exists():
        return exe
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ReferenceUnavailable("a C compiler (cc or gcc) is needed to build the recorder")
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".{exe.name}.{os.getpid()}"
    done = subprocess.run(
        [cc, "-O2", "-Wall", "-o", str(tmp), str(SOURCE), "-lcpg"],
        capture_output=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise ReferenceUnavailable(
            "building the CPG recorder failed: " + done.stderr.decode(errors="replace")[-500:]
        )
    tmp.replace(exe)
    return exe


def corosync_conf(
    *,
    cluster: str,
    nodes: Sequence[tuple[str, int, str]],
    transport: str = "udpu",
    token_ms: int = 1000,
    consensus_ms: int | None = None,
    log_file: Path | None = None,
) -> str:
    """One ``corosync.conf`` for every node: ``nodes`` are (name, nodeid, address); the
    token timeout in force is ``token_ms`` whatever the number of nodes (no
    ``token_coefficient``), consensus 1.2 times it unless given (corosync's default)."""
    if transport not in ("udpu", "knet"):
        raise ValueError(f"corosync transport {transport!r}: udpu or knet")
    consensus = consensus_ms if consensus_ms is not None else int(token_ms * 1.2)
    crypto = "    crypto_cipher: none\n    crypto_hash: none\n" if transport == "knet" else ""
    lines = [
        "totem {",
        "    version: 2",
        f"    cluster_name: {cluster}",
        f"    transport: {transport}",
        f"    token: {token_ms}",
        "    token_coefficient: 0",
        f"    consensus: {consensus}",
        crypto.rstrip("\n"),
        "}",
        "nodelist {",
    ]
    for name, nodeid, address in nodes:
        lines += [
            "    node {",
            f"        ring0_addr: {address}",
            f"        nodeid: {nodeid}",
            f"        name: {name}",
            "    }",
        ]
    lines += ["}", "quorum {", "    provider: corosync_votequorum", "}", "logging {"]
    if log_file is not None:
        lines += ["    to_logfile: yes", f"    logfile: {log_file}", "    to_stderr: no"]
    lines += ["    to_syslog: no", "    timestamp: on", "}", "system {"]
    lines += ["    sched_rr: no", "    priority: 0", "}"]
    return "\n".join(line for line in lines if line) + "\n"


class CpgRecording(Recording):
    """A CPG recorder's output as trace rows, node ids named by ``names``: a
    configuration is held until the next event, which names its ring if it is one
    (the module's doc)."""

    def __init__(self, add: Any, names: Mapping[int, str], **hooks: Any):
        super().__init__(add, "agreed", **hooks)
        self.names = dict(names)
        self.ring: str | None = None
        self._held: list[tuple[int, list[int]]] = []

    def event(self, k: str, t: int, ev: dict[str, Any]) -> None:
        if k == "view":
            self._held.append((t, [int(m) for m in ev["members"]]))
            return
        if k == "ring":
            self.ring = str(ev["ring"])
        held, self._held = self._held, []
        for at, ids in held:
            names = [self.names.get(m, str(m)) for m in ids]
            self.view(at, f"{self.ring}:{'+'.join(str(m) for m in sorted(ids))}", names)
        if k != "ring":
            super().event(k, t, ev)


def live_settings(sc: Scenario) -> dict[str, Any]:
    """corosync's settings for a live run of ``sc``: Totem's token and consensus timeouts
    when the scenario is Totem's (the same failure timeouts on both sides: the token
    timeout in force, as ringcast's Totem computes it with ``token_per_member``), else
    corosync's own defaults (token 1,000 ms, consensus 1.2 times it); unicast (udpu)."""
    if sc.protocol != "totem":
        return {"transport": "udpu", "token_ms": 1000, "consensus_ms": 1200}
    s = sc.settings
    token = max(int(s["token_timeout"]), int(s["token_per_member"]) * len(sc.all_nodes))
    return {
        "transport": "udpu",
        "token_ms": max(1, round(token / 1e6)),
        "consensus_ms": max(1, round(int(s["consensus_timeout"]) / 1e6)),
    }


def _prepare(work: Path, setup: Setup) -> None:
    nodes = [(n, setup.node_id(n), address) for n, address in setup.nodes.items()]
    s = setup.settings
    (work / "corosync.conf").write_text(
        corosync_conf(
            cluster="ringcast",
            nodes=nodes,
            transport=s["transport"],
            token_ms=s["token_ms"],
            consensus_ms=s["consensus_ms"],
        )
    )


def daemon_command(conf: Path, state: Path) -> list[str]:
    """corosync in the foreground with ``/run`` and ``/var/lib/corosync`` bound under
    ``state`` (in the mount namespace ``ip netns exec`` gives the node: one corosync a
    node, its ring id kept across restarts)."""
    for sub in ("run", "lib"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    script = (
        f"mount --bind '{state}/run' /run && mkdir -p /var/lib/corosync && "
        f"mount --bind '{state}/lib' /var/lib/corosync && exec corosync -f -c '{conf}'"
    )
    return ["sh", "-c", script]


MEMBER = Member(
    module=__name__,
    settings=live_settings,
    prepare=_prepare,
    arguments=lambda node, setup: [
        "--nodes",
        ",".join(f"{setup.node_id(n)}={n}" for n in setup.nodes),
    ],
    daemon=lambda node, setup, state: daemon_command(
        Path(setup.trace_dir).parent / "corosync.conf", state
    ),
)
"""corosync as a live run's member: its daemon, then the CPG recorder."""
