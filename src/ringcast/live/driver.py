"""``ringcast live``: a scenario run on real ``ringcast node`` processes, one network
namespace a node, by a nemesis that kills, pauses, partitions and degrades them.

The run, in order:

1. check the scenario against what a live run can apply (:mod:`ringcast.live.plan`),
   that we are root and have ``ip`` and ``nft`` (:mod:`ringcast.live.tools`);
2. build the lab (:mod:`ringcast.live.netns`: one bridge a network), write the cluster
   file (the scenario's protocol and settings, the origin on the monotonic clock) and
   each node's workloads;
3. start every node process (the joiners too) and wait until each is armed at its
   start gate (:mod:`ringcast.runtime.liverun`); the run's origin is then; the initial
   nodes boot at the origin, a joiner at its ``join``;
4. apply the scenario's nemesis at its times, writing down when each fault took
   effect, and watch for nodes that die of their own accord (a *finding*: its exit code
   and log are kept, the run goes on);
5. at the end of the scenario, stop every node without leaving (SIGTERM), merge the
   traces (:mod:`ringcast.live.collect`), write ``trace.parquet`` and ``summary.json``.

Whatever happens (a failure, SIGINT or SIGTERM to the driver) every process started is
killed and the lab's namespaces deleted, which deletes their links, bridges and
nftables rules; nothing is made in the machine's own namespace. Each node process asks
the kernel to kill it should the driver die (``PR_SET_PDEATHSIG``).

The out directory: ``trace.parquet``, ``summary.json``, ``logs/<node>.log`` (each
node's stdout and stderr, every incarnation), and ``_live/`` (the cluster file, state
directories, the nodes' trace segments: skipped by the lab's readers, as every name
starting with ``_``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ringcast.live.collect import DriverRow, merge, write_trace
from ringcast.live.firewall import NetState, ruleset, switch_ruleset
from ringcast.live.netns import IP, Lab, NetnsUnavailable, apply_nft, lab
from ringcast.live.nft import NftLoader, nft_loader
from ringcast.live.plan import check_live
from ringcast.live.tools import LiveError, ensure_tools, has_netem, require_root
from ringcast.references import live as references
from ringcast.references.live import RINGCAST
from ringcast.runtime.config import render_config
from ringcast.runtime.liverun import Planned, write_atomic
from ringcast.runtime.security import write_key_file
from ringcast.sim.scenario import Action, Scenario

PORT = 5405
ARM_TIMEOUT_S = 120.0
"""How long the node processes may take to start and arm (a loaded two-core machine
starting a dozen Python processes takes tens of seconds)."""
STOP_TIMEOUT_S = 15.0
ORIGIN_MARGIN_NS = 50_000_000
"""The origin is this far after the last node armed: time to write the start files."""
WATCH_S = 0.02
"""How often the driver looks for nodes that died while it waits for the next fault."""
WORK = "_live"
NAMESPACES = "namespaces"
"""In ``_live/``: the run's namespaces, for the next run into the directory to remove
should this driver be killed with ``kill -9`` (the one signal it cannot clean up on)."""
PR_SET_PDEATHSIG = 1


NET_ACTIONS = ("partition", "heal", "cut", "link_down", "link_up")
"""The faults applied with nftables (the others act on a node's process)."""


class Interrupted(KeyboardInterrupt):
    """The driver got SIGTERM or SIGINT: it cleaned up and stops (a KeyboardInterrupt,
    so that whatever runs the driver stops as on ^C)."""


@dataclass
class Slot:
    """One incarnation of a node: a process started ahead, held at its own gate
    (``gate/<node>.<k>/``) until its start instant."""

    dir: Path
    proc: subprocess.Popen[bytes] | None = None
    start_ns: int | None = None  # monotonic; None until its gate is opened


@dataclass
class NodeProc:
    """One scenario node: its incarnations and where it stands."""

    name: str
    ns: str
    state: str = "absent"  # absent, up, paused, crashed, left, died
    slots: list[Slot] = field(default_factory=list)
    current: int = -1  # the slot of the incarnation running (or last run)

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.slots[self.current].proc if self.current >= 0 else None

    def procs(self) -> list[subprocess.Popen[bytes]]:
        return [sl.proc for sl in self.slots if sl.proc is not None]


@dataclass
class Applied:
    """One nemesis action: when it was asked for and when it took effect (ns from the
    origin; the latest of its nodes for one that acts on several)."""

    action: str
    node: str | None
    asked_ns: int
    took_effect_ns: int

    @property
    def lag_ns(self) -> int:
        return self.took_effect_ns - self.asked_ns


@dataclass
class LiveRun:
    """What a live run produced (besides its files)."""

    summary: dict[str, Any]
    applied: list[Applied] = field(default_factory=list)


def _signal_node(p: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to everything a node runs: the process group its process leads (a
    reference system's member runs its system's daemon and recorder in it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` while the run goes on."""

    raised = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal raised
        if not raised:  # a second signal must not break off the cleanup of the first
            raised = True
            raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGTERM and SIGINT back while cleaning up (delivered after)."""
    sigs = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)


class Driver:
    """One live run of ``sc`` with ``seed``, writing into ``out``."""

    def __init__(
        self,
        sc: Scenario,
        seed: int,
        out: Path,
        *,
        real_latency: bool = False,
        say: Callable[[str], None] | None = None,
        run_id: str | None = None,
        system: str = RINGCAST,
    ):
        self.sc = sc
        self.system = system
        """``ringcast`` (its own nodes) or a reference system (:mod:`ringcast.references`)."""
        self.setup: Path | None = None
        self.seed = seed
        self.out = out
        self.real_latency = real_latency
        self.say = say or (lambda _m: None)
        self.work = out / WORK
        self.gate = self.work / "gate"
        self.logs = out / "logs"
        self.run_id = run_id or f"{sc.name}:{seed}"
        self.nodes: dict[str, NodeProc] = {}
        self.net = NetState()
        self.rows: list[DriverRow] = []
        self.applied: list[Applied] = []
        self.findings: list[dict[str, Any]] = []
        self.origin = 0
        self.lab: Lab | None = None
        self.nft: NftLoader
        self.config = self.work / "cluster.toml"

    # ------------------------------------------------------------ the run

    def preflight(self) -> None:
        """Everything that can refuse the run, before anything is made."""
        require_root()
        ensure_tools(("ip", "nft"))
        check_live(self.sc, real_latency=self.real_latency, netem=has_netem())
        if self.system != RINGCAST:
            references.check(self.system, self.sc)

    def _left_by_a_killed_driver(self) -> None:
        """Delete the namespaces a driver killed with ``kill -9`` left in this out
        directory (``_live/namespaces`` lists them); refuse if a process still runs in
        one (a driver is running into the same directory)."""
        listed = self.work / NAMESPACES
        if not listed.exists():
            return
        present = set(
            subprocess.run([IP, "netns", "list"], capture_output=True, text=True).stdout.split()
        )
        for ns in listed.read_text().split():
            if ns not in present:
                continue
            pids = subprocess.run(
                [IP, "netns", "pids", ns], capture_output=True, text=True
            ).stdout.split()
            if pids:
                raise LiveError(
                    f"{self.out}: a live run is using this directory (namespace {ns} has "
                    f"processes {', '.join(pids)})"
                )
            subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=10)
            self.say(f"removed namespace {ns}, left by a driver that was killed")

    def run(self) -> LiveRun:
        self.preflight()
        self._left_by_a_killed_driver()
        if self.work.exists():
            shutil.rmtree(self.work)
        if self.logs.exists():
            shutil.rmtree(self.logs)
        for name in ("trace.parquet", "summary.json"):
            (self.out / name).unlink(missing_ok=True)
        self.gate.mkdir(parents=True)
        self.logs.mkdir(parents=True)
        wall0 = time.perf_counter()
        subnets = [f"10.{90 + k}.0" for k in range(self.sc.network.networks)]
        with _signals_raise():
            try:
                with lab(self.sc.all_nodes, subnets, prefix="rcl") as the_lab:
                    self.lab = the_lab
                    spaces = [the_lab.switch, *the_lab.hosts.values()]
                    (self.work / NAMESPACES).write_text("\n".join(spaces) + "\n")
                    self.nodes = {n: NodeProc(n, ns) for n, ns in the_lab.hosts.items()}
                    self.nft = nft_loader(list(the_lab.hosts.values()))
                    try:
                        self._run_in(the_lab)
                    finally:
                        with _signals_held():
                            self._kill_all()
                            self.nft.close()
            except NetnsUnavailable as e:
                raise LiveError(str(e)) from None
        wall = time.perf_counter() - wall0
        return self._finish(wall)

    def _run_in(self, the_lab: Lab) -> None:
        self._write_cluster(the_lab)
        self._network(*self.sc.all_nodes)  # every namespace's table, empty, before the start
        self._duplication(the_lab)
        # every incarnation the scenario asks for, started now and held at its gate
        boots = {n: 1 for n in self.sc.nodes}
        for a in self.sc.nemesis:
            if a.action in ("join", "restart") and a.node is not None:
                boots[a.node] = boots.get(a.node, 0) + 1
        for n, k in boots.items():
            for _ in range(k):
                self._spawn(n)
        procs = sum(boots.values())
        tag = the_lab.switch.rpartition("-")[2]
        self.say(
            f"starting {procs} node processes ({len(boots)} nodes and their restarts; "
            f"namespaces rcl*-{tag})"
        )
        self._await_armed([sl for np_ in self.nodes.values() for sl in np_.slots])
        self.origin = time.monotonic_ns() + ORIGIN_MARGIN_NS
        for n in self.sc.nodes:
            self._boot(n, self.origin)
        # each join and restart opens the gate of the node's next slot at its time
        nxt = {n: 1 if n in self.sc.nodes else 0 for n in boots}
        for a in self.sc.nemesis:
            if a.action in ("join", "restart") and a.node is not None:
                slot = self.nodes[a.node].slots[nxt[a.node]]
                self._open_gate(slot, self.origin + a.at)
                nxt[a.node] += 1
        self.say(f"run started; {len(self.sc.nemesis)} faults over {self.sc.duration / 1e9:g}s")
        batch: list[Action] = []  # network faults of one instant: one update of the rules
        for a in self.sc.nemesis:
            if batch and (a.at != batch[0].at or a.action not in NET_ACTIONS):
                self._apply_network(batch)
                batch = []
            self._wait_until(self.origin + a.at)
            if a.action in NET_ACTIONS:
                batch.append(a)
            else:
                self._apply(a)
        if batch:
            self._apply_network(batch)
        self._wait_until(self.origin + self.sc.duration)
        self._end()

    def _boot(self, n: str, start_ns: int) -> None:
        np_ = self.nodes[n]
        np_.current += 1
        np_.state = "up"
        slot = np_.slots[np_.current]
        if slot.start_ns is None:
            self._open_gate(slot, start_ns)

    # ------------------------------------------------------------ processes

    def _spawn(self, n: str) -> Slot:
        """Start a process for ``n``'s next slot; it arms and waits at its gate."""
        np_ = self.nodes[n]
        slot = Slot(self.gate / f"{n}.{len(np_.slots) + 1}")
        slot.dir.mkdir()
        shutil.copy(self.gate / f"{n}.workload.json", slot.dir / f"{n}.workload.json")
        if self.setup is not None:  # a reference system's member
            what = references.command(self.setup, n, slot.dir)
        else:
            what = ["-m", "ringcast.cli.main", "node", "--config", str(self.config)]
            what += ["--id", n, "--live-dir", str(slot.dir)]
        cmd = [IP, "netns", "exec", np_.ns, sys.executable, *what]
        with open(self.logs / f"{n}.log", "ab") as log:
            slot.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # the driver's ^C is the driver's, not theirs
                preexec_fn=_die_with_parent,
            )
        np_.slots.append(slot)
        return slot

    @staticmethod
    def _armed_at(slot: Slot) -> int | None:
        files = list(slot.dir.glob("*.armed"))
        if not files:
            return None
        return int(json.loads(files[0].read_text())["t"])

    def _await_armed(self, slots: list[Slot]) -> None:
        deadline = time.monotonic() + ARM_TIMEOUT_S
        waiting = list(slots)
        while waiting:
            for sl in list(waiting):
                assert sl.proc is not None
                if self._armed_at(sl) is not None:
                    waiting.remove(sl)
                elif sl.proc.poll() is not None:
                    node = sl.dir.name.rpartition(".")[0]
                    raise LiveError(
                        f"node {node} exited with {sl.proc.returncode} before it started: "
                        f"{self._log_tail(node)}"
                    )
            if waiting and time.monotonic() > deadline:
                names = ", ".join(sorted(sl.dir.name for sl in waiting))
                raise LiveError(f"node processes {names} not started within {ARM_TIMEOUT_S:g}s")
            if waiting:
                time.sleep(WATCH_S)

    def _open_gate(self, slot: Slot, start_ns: int) -> None:
        node = slot.dir.name.rpartition(".")[0]
        write_atomic(slot.dir / f"{node}.start", {"origin_ns": self.origin, "start_ns": start_ns})
        slot.start_ns = start_ns

    def _log_tail(self, n: str) -> str:
        try:
            lines = (self.logs / f"{n}.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1][:300] if lines else "(empty log)"

    def _watch(self) -> None:
        """Note every node that ended without being told to (a finding)."""
        for np_ in self.nodes.values():
            p = np_.proc
            if np_.state in ("up", "paused") and p is not None and p.poll() is not None:
                t = self._now()
                np_.state = "died"
                self.findings.append(
                    {
                        "node": np_.name,
                        "t": t,
                        "exit": p.returncode,
                        "log": str((self.logs / f"{np_.name}.log").relative_to(self.out)),
                        "last_line": self._log_tail(np_.name),
                    }
                )
                self.say(f"finding: node {np_.name} exited with {p.returncode} at {t / 1e9:.3f}s")

    def _wait_until(self, target_ns: int) -> None:
        while True:
            self._watch()
            left = target_ns - time.monotonic_ns()
            if left <= 0:
                return
            time.sleep(min(left / 1e9, WATCH_S))

    def _now(self) -> int:
        return time.monotonic_ns() - self.origin

    def _kill_all(self) -> None:
        for np_ in self.nodes.values():
            for p in np_.procs():
                _signal_node(p, signal.SIGKILL)  # the node's whole process group
                if p.poll() is None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        p.wait(10)

    # ------------------------------------------------------------ the nemesis

    def _fault(self, node: str, t: int, action: str, fallback: bool = False, **extra: Any) -> None:
        self.rows.append(DriverRow(node, t, "fault", {"action": action, **extra}, fallback))

    def _network(self, *nodes: str) -> dict[str, int]:
        """Bring the rules of ``nodes`` in line with the network state, all at once;
        the time each node's hold from (ns from the origin)."""
        assert self.lab is not None
        the_lab = self.lab
        addresses = {
            m: [the_lab.address(m, k) for k in range(self.sc.network.networks)]
            for m in self.sc.all_nodes
        }
        texts = {the_lab.hosts[n]: ruleset(n, self.net, self.sc.network, addresses) for n in nodes}
        held = self.nft.apply(texts, self._now)
        return {n: held[the_lab.hosts[n]] for n in nodes}

    def _duplication(self, the_lab: Lab) -> None:
        """The scenario's duplication, in the switch namespace for the whole run."""
        nets = range(self.sc.network.networks)
        text = switch_ruleset(
            self.sc.network,
            {m: [the_lab.address(m, k) for k in nets] for m in self.sc.all_nodes},
            {m: [the_lab.port(m, k) for k in nets] for m in self.sc.all_nodes},
        )
        if text is not None:
            apply_nft({the_lab.switch: text}, self._now)

    def _apply_network(self, batch: list[Action]) -> None:
        """The network faults asked for at one instant: the state changed for each in
        turn, then every namespace concerned updated at once."""
        all_nodes = self.sc.all_nodes
        done: list[tuple[Action, tuple[str, ...], dict[str, Any]]] = []
        for a in batch:
            extra: dict[str, Any] = {}
            if a.action == "partition":
                self.net.partition(a.groups, all_nodes)
                extra = {"groups": [list(g) for g in a.groups]}
                nodes = all_nodes
            elif a.action == "heal":
                self.net.heal()
                nodes = all_nodes
            elif a.action == "cut":
                self.net.cuts.update((s, d) for s in a.cut_from for d in a.cut_to if s != d)
                extra = {"cut_from": list(a.cut_from), "cut_to": list(a.cut_to)}
                nodes = tuple(sorted({*a.cut_from, *a.cut_to}))
            else:  # link_down, link_up
                assert a.node is not None and a.network is not None
                key = (a.node, a.network)
                if a.action == "link_down":
                    self.net.links_down.add(key)
                else:
                    self.net.links_down.discard(key)
                extra = {"network": a.network}
                nodes = (a.node,)
            done.append((a, nodes, extra))
        touched = {n for _, nodes, _ in done for n in nodes}
        held = self._network(*(n for n in all_nodes if n in touched))
        for a, nodes, extra in done:
            for n in nodes:
                self._fault(n, held[n], a.action, **extra)
            self.applied.append(Applied(a.action, a.node, a.at, max(held[n] for n in nodes)))

    def _apply(self, a: Action) -> None:
        """A fault on one node's process."""
        asked = a.at
        act = a.action
        assert a.node is not None
        n = a.node
        np_ = self.nodes[n]
        if np_.state == "died" and act != "restart":
            self.findings.append(
                {"node": n, "t": self._now(), "skipped": act, "because": "the node had died"}
            )
            return
        p = np_.proc
        if act == "crash":
            assert p is not None
            _signal_node(p, signal.SIGKILL)  # it runs no more from here
            t = self._now()
            p.wait(10)
            np_.state = "crashed"
            self._fault(n, t, "crash")
        elif act in ("pause", "resume"):
            assert p is not None
            _signal_node(p, signal.SIGSTOP if act == "pause" else signal.SIGCONT)
            t = self._now()
            np_.state = "paused" if act == "pause" else "up"
            self._fault(n, t, act)
        elif act in ("restart", "join"):
            self._boot(n, time.monotonic_ns())
            t = self._gate_opened(np_.slots[np_.current])
            self._fault(n, t, act, fallback=act == "restart")
        elif act == "leave":
            assert p is not None
            p.send_signal(signal.SIGINT)
            t = self._now()
            np_.state = "left"
            self._fault(n, t, "leave", fallback=True)
            if a.linger:  # gone that long into its leave, whether it finished or not
                self._wait_until(self.origin + a.at + a.linger)
                _signal_node(p, signal.SIGKILL)
        else:  # pragma: no cover - plan.check_live refuses the rest
            raise LiveError(f"cannot apply {act!r}")
        self.applied.append(Applied(act, n, asked, t))

    def _gate_opened(self, slot: Slot) -> int:
        """When ``slot`` left its gate (ns from the origin): its start instant, or when
        it armed if that was later."""
        armed = self._armed_at(slot)
        assert armed is not None and slot.start_ns is not None
        return max(armed, slot.start_ns) - self.origin

    def _end(self) -> None:
        """The end of the scenario: every node stops where it stands, without leaving."""
        self._watch()
        ending = [(np_, p) for np_ in self.nodes.values() for p in np_.procs() if p.poll() is None]
        for _, p in ending:  # a process still at its gate ends without starting
            p.send_signal(signal.SIGTERM)
            _signal_node(p, signal.SIGCONT)  # a paused node stops too
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for np_, p in ending:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_node(p, signal.SIGKILL)
                p.wait(10)
                self.findings.append(
                    {"node": np_.name, "t": self._now(), "stuck": "did not stop on SIGTERM"}
                )
            else:
                if p.returncode != 0 and p is np_.proc and np_.state in ("up", "paused"):
                    self.findings.append(
                        {"node": np_.name, "t": self._now(), "exit": p.returncode, "at": "stop"}
                    )

    # ------------------------------------------------------------ the outcome

    def _finish(self, wall: float) -> LiveRun:
        sc = self.sc
        states = {n: np_.state for n, np_ in self.nodes.items()}
        table = merge(self.work / "trace", self.run_id, self.rows, states, sc.duration)
        protocol = sc.protocol if self.system == RINGCAST else self.system
        write_trace(table, self.out / "trace.parquet", protocol)
        kinds = table["kind"].to_pylist()
        nodes_col = table["node"].to_pylist()
        views: dict[str, int] = dict.fromkeys(sc.all_nodes, 0)
        for k, n in zip(kinds, nodes_col, strict=True):
            if k == "view":
                views[n] += 1
        summary = {
            "run": self.run_id,
            "scenario": sc.name,
            "protocol": protocol,
            "system": self.system,
            "seed": self.seed,
            "mode": "live",
            "events": len(table),
            "duration_ns": sc.duration,
            "wall_s": round(wall, 3),
            "deliveries": kinds.count("deliver"),
            "views_installed": views,
            "latency": "the bridges' own" if self.real_latency else "none asked",
            "nodes": {
                n: {
                    "namespace": np_.ns,
                    "end": np_.state,
                    "incarnations": np_.current + 1,
                    "log": f"logs/{n}.log",
                }
                for n, np_ in self.nodes.items()
            },
            "nemesis": [
                {**asdict(a), "lag_ns": a.lag_ns, **self._booted(a, table)} for a in self.applied
            ],
            "findings": self.findings,
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        return LiveRun(summary, self.applied)

    @staticmethod
    def _booted(a: Applied, table: Any) -> dict[str, int | None]:
        """For a join or restart: when the new process wrote its first row of its own
        (its machine started), beside the gate's opening (``took_effect_ns``)."""
        if a.action not in ("join", "restart"):
            return {}
        import pyarrow.compute as pc

        mine = table.filter(
            pc.and_(
                pc.and_(
                    pc.equal(table["node"], a.node), pc.greater_equal(table["t"], a.took_effect_ns)
                ),
                pc.not_equal(table["kind"], "fault"),
            )
        )
        first = pc.min(mine["t"]).as_py() if len(mine) else None
        return {"first_row_ns": first}

    def _write_cluster(self, the_lab: Lab) -> None:
        if self.system != RINGCAST:
            addresses = {n: the_lab.address(n) for n in self.sc.all_nodes}
            self.setup = references.prepare(self.system, self.work, self.sc, self.run_id, addresses)
        write_key_file(self.work / "cluster.key")
        nets = range(self.sc.network.networks)
        entries = [
            (n, [f"{the_lab.address(n, k)}:{PORT}" for k in nets], None) for n in self.sc.all_nodes
        ]
        self.config.write_text(
            render_config(
                name=self.sc.name,
                protocol=self.sc.protocol,
                nodes=entries,
                settings=self.sc.settings,
                trace_format="jsonl",
                trace_write_through=True,
                run_id=self.run_id,
                origin_ns=0,
                origin_clock="monotonic",
                trace_packets=self.sc.trace_packets,
                joining=self.sc.joiners,
            )
        )
        for n in self.sc.all_nodes:
            plans = [
                Planned(
                    kind=wl.kind,
                    rate=wl.rate,
                    size=wl.size,
                    order=wl.order,
                    start_ns=wl.start,
                    count=wl.count,
                    duration_ns=wl.duration,
                    arrivals=wl.arrivals,
                    hold_ns=wl.hold,
                    seed=self.seed,
                )
                for wl in self.sc.workloads
                if n in wl.nodes
            ]
            write_atomic(self.gate / f"{n}.workload.json", [asdict(p) for p in plans])


def run_live(
    sc: Scenario,
    seed: int,
    out: Path,
    *,
    real_latency: bool = False,
    say: Callable[[str], None] | None = None,
    run_id: str | None = None,
    system: str = RINGCAST,
) -> LiveRun:
    """Run ``sc`` live (see the module's docstring); :class:`LiveError` when it cannot,
    :class:`Interrupted` when the driver was told to stop (after cleaning up).
    ``run_id``: the trace's ``run`` (default ``<scenario>:<seed>``, as simulated);
    ``system``: whose nodes run it, ringcast's or a reference system's."""
    driver = Driver(sc, seed, out, real_latency=real_latency, say=say, run_id=run_id, system=system)
    return driver.run()
