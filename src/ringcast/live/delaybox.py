"""A userspace switch that delays and reorders frames as a scenario's latency model says.

Where the kernel has no tc ``netem`` (``ringcast.live.tools.has_netem``), nothing in it
can hold a frame back: nftables drops and copies, and the other queueing disciplines
(htb, tbf, pfifo) shape a rate, not a delay. The *delay box* stands in for a network's
bridge instead: one process in the lab's switch namespace opens an ``AF_PACKET`` socket
on each switch-side veth port of the network, learns which MAC address is behind which
port (as a learning bridge does, IEEE 802.1D), and writes each frame a node sends to the
receiver's port (broadcast, multicast and unknown destinations to every other port) once
the delay drawn for that (sender, receiver) link has passed. The draw is the simulator's
(``ringcast.sim.world``'s ``_send``), so a scenario means the same thing on both
sides: a sample of the link's latency distribution (a ``[[network.links]]`` rule's own or
the network's), plus, with probability ``network.reorder``, a uniform extra hold of up to
``reorder_delay`` (a message overtaken by later ones, as Totem's and the Raincore paper's
networks may reorder); with ``network.duplication`` (or a link's), two copies, each with
its own draw. Each link draws from its own stream seeded from the run's seed.

Only IPv4 frames are delayed (the nodes' UDP datagrams); ARP and the rest pass at once,
since the simulator has no address resolution to delay. Loss and partitions stay in the
nodes' own nftables rules (``ringcast.live.firewall``), at each receiver's input hook,
so they apply to what the box delivers exactly as to what a bridge delivers.

Frames are read and written with a ``virtio_net_hdr`` in front (``PACKET_VNET_HDR``,
packet(7)): a node's datagram leaves its veth with its checksum still to be filled in
and, with UDP segmentation offload, as one frame holding a run of datagrams; the header
carries both facts across the box, so the kernel completes the checksum and cuts the run
on the way out. A run is one frame for the box, one draw for the whole run, so the live
driver turns the nodes' offload off (``udp_offload = false``) when the box carries their
traffic: a datagram a frame, a draw a datagram, as simulated (``runs`` counts the runs
that crossed all the same).

Run as ``python -m ringcast.live.delaybox PLAN.json`` in the switch namespace (the live
driver does; :func:`write_plan` writes the plan). It writes ``READY`` beside the plan
once every socket is open, and on SIGTERM or SIGINT writes its counters to ``STATS`` and
exits.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ringcast.live.netns import IP
from ringcast.sim.latency import Latency
from ringcast.sim.rng import stream
from ringcast.sim.scenario import NetworkModel

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_VNET_HDR = 15
PACKET_OUTGOING = 4
VNET_HDR = 10
"""Bytes of ``struct virtio_net_hdr`` in front of each frame read or written."""
RCVBUF = 4 << 20
READY = "ready"
STATS = "stats.json"
BATCH = 64
"""Frames read from one port in a row, at most, before the due frames are written."""
IDLE_S = 1.0
"""How long the box sleeps at most when it holds nothing (a stop wakes it at once)."""


@dataclass(frozen=True)
class Port:
    """A switch-side veth port: whose node is behind it, on which network."""

    node: str
    network: int
    ifname: str


@dataclass(frozen=True)
class LinkModel:
    """What the box draws for one (sender, receiver) link."""

    latency: Latency
    reorder: float = 0.0
    reorder_delay: int = 0
    duplication: float = 0.0


@dataclass(frozen=True)
class Plan:
    """Everything the box needs: its ports, each link's model and the run's seed."""

    seed: int
    ports: tuple[Port, ...]
    links: Mapping[tuple[str, str], LinkModel]


ZERO = Latency("constant", value=0)


def link_models(
    model: NetworkModel, nodes: Sequence[str], *, real_latency: bool = False
) -> dict[tuple[str, str], LinkModel]:
    """Each ordered pair's :class:`LinkModel`, resolved as the simulator resolves a link
    (``World._link``): a ``[[network.links]]`` rule without ``match`` overrides the
    network's latency and duplication. ``real_latency``: no latency drawn (the wires'
    own), reordering and duplication still applied."""
    out = {}
    for src in nodes:
        for dst in nodes:
            if src == dst:
                continue
            lat, dup = model.latency, model.duplication
            for rule in model.links:
                if rule.src == src and rule.dst == dst and rule.match is None:
                    lat = rule.latency or lat
                    dup = rule.duplication if rule.duplication is not None else dup
            out[(src, dst)] = LinkModel(
                ZERO if real_latency else lat, model.reorder, model.reorder_delay, dup
            )
    return out


def draw(link: LinkModel, rng: random.Random) -> list[int]:
    """The delays (ns) of the copies of one frame on ``link``: the simulator's draw,
    one or two copies, each its latency sample plus, with probability ``reorder``, a
    uniform extra of up to ``reorder_delay``."""
    copies = 2 if link.duplication and rng.random() < link.duplication else 1
    delays = []
    for _ in range(copies):
        delay = link.latency.sample(rng)
        if link.reorder and rng.random() < link.reorder:
            delay += rng.randint(0, link.reorder_delay)
        delays.append(delay)
    return delays


def write_plan(plan: Plan, path: Path) -> None:
    doc = {
        "seed": plan.seed,
        "ports": [asdict(p) for p in plan.ports],
        "links": [
            {"src": s, "dst": d, **asdict(m), "latency": asdict(m.latency)}
            for (s, d), m in sorted(plan.links.items())
        ],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def read_plan(path: Path) -> Plan:
    doc = json.loads(path.read_text())
    links = {}
    for item in doc["links"]:
        lat = Latency(**item.pop("latency"))
        src, dst = item.pop("src"), item.pop("dst")
        links[(src, dst)] = LinkModel(lat, **item)
    return Plan(int(doc["seed"]), tuple(Port(**p) for p in doc["ports"]), links)


@dataclass
class Counters:
    """What the box did, written to ``STATS`` at its end."""

    frames_in: int = 0
    frames_out: int = 0
    delayed: int = 0
    copies: int = 0
    runs: int = 0
    """Frames that were a run of datagrams (a segmented send: one draw for the run)."""
    send_errors: int = 0
    scheduling: str = "normal"
    late_ns: list[int] = field(default_factory=list)
    """How long after its due time each delayed frame was written (a sample: the first
    100,000)."""

    def summary(self) -> dict[str, Any]:
        late = sorted(self.late_ns)

        def q(p: float) -> int | None:
            return late[min(len(late) - 1, int(p * len(late)))] if late else None

        return {
            "frames_in": self.frames_in,
            "frames_out": self.frames_out,
            "delayed": self.delayed,
            "copies": self.copies,
            "runs": self.runs,
            "send_errors": self.send_errors,
            "scheduling": self.scheduling,
            "late_ns": {"median": q(0.5), "p99": q(0.99), "max": late[-1] if late else None},
        }


def _open(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
        s.bind((ifname, 0))
        index = socket.if_nametoindex(ifname)
        s.setsockopt(
            SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            struct.pack("iHH8s", index, PACKET_MR_PROMISC, 0, b""),
        )
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        s.setblocking(False)
    except BaseException:
        s.close()
        raise
    return s


class _Stop(Exception):
    """SIGTERM or SIGINT: the box stops at once, wherever it was."""


class Box:
    """The forwarding loop over ``plan``'s ports (see the module's docstring)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.socks: dict[int, socket.socket] = {}  # fd -> socket
        self.port_of: dict[int, Port] = {}  # fd -> its port
        self.by_network: dict[int, list[int]] = {}  # network -> its ports' fds
        self.fd_of: dict[tuple[str, int], int] = {}  # (node, network) -> fd
        self.macs: dict[tuple[int, bytes], int] = {}  # (network, MAC) -> fd
        self.rngs = {
            pair: stream(plan.seed, f"live-link:{pair[0]}->{pair[1]}") for pair in plan.links
        }
        self.held: list[tuple[int, int, int, bytes]] = []  # (due, seq, fd, frame)
        self.seq = 0
        self.count = Counters()
        self.stopping = False
        try:
            for p in plan.ports:
                s = _open(p.ifname)
                fd = s.fileno()
                self.socks[fd] = s
                self.port_of[fd] = p
                self.by_network.setdefault(p.network, []).append(fd)
                self.fd_of[(p.node, p.network)] = fd
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()

    def _send(self, fd: int, frame: bytes) -> None:
        try:
            self.socks[fd].send(frame)
            self.count.frames_out += 1
        except OSError:
            self.count.send_errors += 1

    def _targets(self, fd: int, frame: bytes) -> Iterable[int]:
        """The ports a frame read on ``fd`` goes out of (learning its source MAC)."""
        net = self.port_of[fd].network
        eth = frame[VNET_HDR:]
        self.macs[(net, bytes(eth[6:12]))] = fd
        dst = bytes(eth[0:6])
        if not dst[0] & 1:
            known = self.macs.get((net, dst))
            if known is not None:
                return () if known == fd else (known,)
        return [o for o in self.by_network[net] if o != fd]

    def _frame(self, fd: int, frame: bytes, now: int) -> None:
        self.count.frames_in += 1
        if frame[1]:  # virtio_net_hdr.gso_type: not VIRTIO_NET_HDR_GSO_NONE
            self.count.runs += 1
        eth = frame[VNET_HDR:]
        ip = len(eth) >= 14 and eth[12:14] == b"\x08\x00"
        src = self.port_of[fd].node
        for out in self._targets(fd, frame):
            if not ip:
                self._send(out, frame)
                continue
            pair = (src, self.port_of[out].node)
            delays = draw(self.plan.links[pair], self.rngs[pair])
            self.count.copies += len(delays) - 1
            for d in delays:
                if d <= 0:
                    self._send(out, frame)
                    continue
                self.count.delayed += 1
                self.seq += 1
                heapq.heappush(self.held, (now + d, self.seq, out, frame))

    def _release(self) -> None:
        held = self.held
        late = self.count.late_ns
        while held:
            now = time.monotonic_ns()
            if held[0][0] > now:
                return
            due, _, fd, frame = heapq.heappop(held)
            self._send(fd, frame)
            if len(late) < 100_000:
                late.append(now - due)

    def _read(self, fd: int) -> None:
        """Take what waits on ``fd``, at most :data:`BATCH` frames (then the held frames
        that fell due go out before more is read)."""
        s = self.socks[fd]
        for _ in range(BATCH):
            try:
                frame, addr = s.recvfrom(65536 + VNET_HDR)
            except BlockingIOError:
                return
            if addr[2] == PACKET_OUTGOING:  # our own writes out of this port
                continue
            self._frame(fd, frame, time.monotonic_ns())

    def serve(self) -> None:
        """Forward until :attr:`stopping` is set (by a signal)."""
        fds = list(self.socks)
        while not self.stopping:
            self._release()
            if self.held:
                wait = max(0.0, (self.held[0][0] - time.monotonic_ns()) / 1e9)
            else:
                wait = IDLE_S
            try:
                ready, _, _ = select.select(fds, [], [], wait)
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            for fd in ready:
                self._read(fd)


START_TIMEOUT_S = 60.0


def start(
    plan: Plan,
    namespace: str,
    workdir: Path,
    *,
    log: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Start the box for ``plan`` in ``namespace`` (its plan, ``READY`` and ``STATS`` in
    ``workdir``) and return once its sockets are open; :class:`RuntimeError` naming its
    last words should it exit first. It runs in a session of its own."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in (READY, STATS):
        (workdir / name).unlink(missing_ok=True)
    write_plan(plan, workdir / "plan.json")
    cmd = [IP, "netns", "exec", namespace, sys.executable, "-m", "ringcast.live.delaybox"]
    out = open(log or workdir / "delaybox.log", "ab")  # noqa: SIM115 - the child's
    try:
        proc = subprocess.Popen(
            [*cmd, str(workdir / "plan.json")],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
    finally:
        out.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (workdir / READY).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            text = (log or workdir / "delaybox.log").read_text(errors="replace").strip()
            last = text.splitlines()[-1] if text else f"exit {proc.returncode}"
            raise RuntimeError(f"the delay box did not start: {last}")
        time.sleep(0.01)
    return proc


def stop(proc: subprocess.Popen[bytes], workdir: Path | None = None) -> dict[str, Any] | None:
    """Stop the box (SIGTERM, then SIGKILL after 5 s); its counters when it wrote them."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    if workdir is None or not (workdir / STATS).exists():
        return None
    stats: dict[str, Any] = json.loads((workdir / STATS).read_text())
    return stats


def _priority() -> str:
    """Ask for the lowest real-time priority (``SCHED_FIFO`` 1, sched(7)); the policy
    the box got. A box at ordinary priority on a loaded machine waits for a CPU for tens
    to hundreds of milliseconds now and then, every frame it holds waiting with it; at
    ``SCHED_FIFO`` it runs as soon as a frame is due. It sleeps in ``select`` between
    frames, does a bounded piece of work a frame the nodes send, and the kernel's
    real-time throttling (``sched_rt_runtime_us``) bounds it in any case."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        return "normal"
    return "fifo"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m ringcast.live.delaybox PLAN.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    policy = _priority()
    box = Box(read_plan(path))
    box.count.scheduling = policy

    def stop(signum: int, frame: Any) -> None:
        box.stopping = True
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    (path.parent / READY).write_text(f"{os.getpid()}\n")
    try:
        box.serve()
    except _Stop:
        pass
    finally:
        with contextlib.suppress(OSError):
            (path.parent / STATS).write_text(json.dumps(box.count.summary(), indent=1) + "\n")
        box.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
