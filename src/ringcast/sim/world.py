"""The deterministic simulator: protocol machines on a modelled network under a nemesis.

:class:`Simulation` hosts one machine per node, exactly as the runtime does: it feeds
events to ``machine.handle(event, now)`` and carries out the effects. Virtual time is
integer nanoseconds; every random draw comes from a seeded per-component stream, so
the same scenario and seed give the same trace, byte for byte.

A crashed node loses its machine, its timers and whatever was in flight to it;
its stable storage (``Persist``) survives and is handed to the machine built at
restart. A paused node (a stalled process) keeps its arrivals and timers queued and
handles them, late, when it resumes.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ringcast.core.codec import DecodeError, EncodeError, decode, encode, encoded_size
from ringcast.core.effects import Deliver
from ringcast.core.events import LockRelease, Received, Start, Stop, TimerFired
from ringcast.core.ids import View
from ringcast.core.interpreter import Interpreter
from ringcast.core.machine import Machine, MachineContext
from ringcast.protocols import registry
from ringcast.sim.garble import garbled
from ringcast.sim.latency import Latency
from ringcast.sim.recorder import Recorder
from ringcast.sim.result import SimResult
from ringcast.sim.rng import derive, stream
from ringcast.sim.scenario import Action, Scenario, Workload
from ringcast.sim.scheduler import Scheduler

UP, PAUSED, CRASHED, ABSENT, LEFT = "up", "paused", "crashed", "absent", "left"


@dataclass(slots=True)
class SimNode:
    node_id: str
    state: str = ABSENT
    machine: Machine | None = None
    interp: Interpreter = field(init=False)
    timers: dict[str, int] = field(default_factory=dict)
    queue: list[tuple[Any, ...]] = field(default_factory=list)
    storage: dict[str, bytes] = field(default_factory=dict)
    waiting: list[Any] = field(default_factory=list)
    counter: int = 0
    incarnation: int = 0
    lock_pending: bool = False
    sent: int = 0
    sent_bytes: int = 0
    received: int = 0
    lost: int = 0


@dataclass(slots=True)
class _Link:
    latency: Latency
    loss: float
    duplication: float
    rng: random.Random


SATURATING_BURST = 64
SATURATING_TICK = 1_000_000
"""A saturating workload (``rate = 0``) submits up to ``SATURATING_BURST`` messages a
``SATURATING_TICK`` of virtual time, stopping whenever flow control blocks (and going on
when it unblocks): as fast as flow control allows, with a ceiling of 64,000 messages a
second a node for a protocol that has none (the simulator has no CPU to run out of)."""


@dataclass(slots=True)
class _WorkloadRun:
    wl: Workload
    node: str
    rng: random.Random
    remaining: int | None
    end: int | None
    waiting: bool = False


class Simulation:
    """One seeded run of a :class:`~ringcast.sim.scenario.Scenario`."""

    def __init__(self, scenario: Scenario, seed: int | None = None, *, run_id: str | None = None):
        self.sc = scenario
        self.seed = scenario.seed if seed is None else seed
        self.run_id = run_id or f"{scenario.name}:{self.seed}"
        self.spec = registry.get(scenario.protocol)
        self.sched = Scheduler()
        self.rec = Recorder(self.run_id)
        self.nodes: dict[str, SimNode] = {n: SimNode(n) for n in scenario.all_nodes}
        for node in self.nodes.values():
            node.interp = Interpreter(
                node.node_id,
                _SimIO(self, node),
                self.rec.sink(node.node_id),
                networks=scenario.network.networks,
                packets=scenario.trace_packets,
            )
        self._component: dict[str, int] = dict.fromkeys(scenario.all_nodes, 0)
        self._links_down: set[tuple[str, int]] = set()
        self._cuts: set[tuple[str, str]] = set()  # one-way cuts (asymmetric partitions)
        self._links: dict[tuple[str, str], _Link] = {}
        # (src, dst, message class) -> the link of that class, for rules with ``match``
        self._class_links: dict[tuple[str, str, str], _Link] = {}
        self._matched = {(r.src, r.dst): r for r in scenario.network.links if r.match}
        self._garbling: dict[str, float] = {}  # node -> share of its messages garbled
        self._garbled = 0  # messages sent with a hostile field (the summary's count)
        self._drops = list(scenario.network.drops)
        self._drop_counts = [0] * len(self._drops)  # messages each rule has matched
        self._timer_gen = 0
        self._count_bytes = scenario.count_bytes
        self._packets = scenario.trace_packets
        self._net = scenario.network
        self._peers = scenario.all_nodes
        self._detection_timeout = self.spec.timeout_ns(scenario.settings)
        self._impaired = False
        self._tampering = False
        self._note_faults()

    # ------------------------------------------------------------ running

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        sc = self.sc
        wall0 = time.perf_counter()
        for n in sc.nodes:
            self.sched.call_at(0, self._boot, n, False)
        for a in sc.nemesis:
            self.sched.call_at(a.at, self._nemesis, a)
        for wi, wl in enumerate(sc.workloads):
            for n in wl.nodes:
                rng = stream(self.seed, f"workload:{wi}:{n}")
                end = wl.start + wl.duration if wl.duration is not None else None
                self.sched.call_at(
                    wl.start, self._workload_tick, _WorkloadRun(wl, n, rng, wl.count, end)
                )
        chunks = 50 if progress else 1
        for k in range(1, chunks + 1):
            self.sched.run(sc.duration * k // chunks)
            if progress:
                progress(k / chunks)
        for n in sc.all_nodes:
            node = self.nodes[n]
            self.rec.add(
                n,
                sc.duration,
                "stats",
                detail={
                    "sent": node.sent,
                    "sent_bytes": node.sent_bytes,
                    "received": node.received,
                    "lost": node.lost,
                    "state": node.state,
                    # the family's failure-detection timeout at these settings: the
                    # lab's convergence bound is stated in it
                    "detection_timeout": self._detection_timeout,
                },
            )
        wall = time.perf_counter() - wall0
        machines = {n: node.machine for n, node in self.nodes.items() if node.machine is not None}
        summary = {
            "run": self.run_id,
            "scenario": sc.name,
            "protocol": sc.protocol,
            "seed": self.seed,
            "events": len(self.rec),
            "sim_events": self.sched.steps,
            "simulated_ns": sc.duration,
            "wall_s": round(wall, 6),
            "events_per_wall_second": round(self.sched.steps / wall) if wall > 0 else None,
            "deliveries": sum(x.interp.delivered for x in self.nodes.values()),
            "views_installed": {n: x.interp.views for n, x in self.nodes.items()},
            "messages_sent": sum(x.sent for x in self.nodes.values()),
            "bytes_sent": sum(x.sent_bytes for x in self.nodes.values()),
            "messages_lost": sum(x.lost for x in self.nodes.values()),
            "messages_garbled": self._garbled,
        }
        return SimResult(sc, self.seed, self.run_id, self.rec, machines, summary)

    # ------------------------------------------------------------ node lifecycle

    def _boot(self, n: str, joining: bool) -> None:
        node = self.nodes[n]
        node.incarnation += 1
        ctx = MachineContext(
            node_id=n,
            members=self.sc.nodes,
            peers=self._peers,
            settings=self.sc.settings,
            storage=dict(node.storage),
            networks=self._net.networks,
            joining=joining,
            seed=derive(self.seed, f"machine:{n}:{node.incarnation}"),
        )
        node.machine = self.spec.factory(ctx)
        node.state = UP
        self._feed(node, Start())

    def _feed(self, node: SimNode, event: Any) -> None:
        machine = node.machine
        assert machine is not None
        now = self.sched.now
        effects = machine.handle(event, now)
        if effects:
            node.interp.apply(effects, now)

    def _set_timer(self, node: SimNode, name: str, delay: int) -> None:
        self._timer_gen += 1
        gen = self._timer_gen
        node.timers[name] = gen
        self.sched.call_at(self.sched.now + delay, self._timer, node, name, gen)

    def _lock_granted(self, node: SimNode) -> None:
        node.lock_pending = False
        now = self.sched.now
        self.sched.call_at(
            now + self._lock_hold(node.node_id), self._lock_release, node, node.incarnation
        )

    def _unblocked(self, node: SimNode) -> None:
        if node.waiting:
            waiting, node.waiting = node.waiting, []
            for run in waiting:
                run.waiting = False
                self.sched.call_at(self.sched.now, self._workload_tick, run)

    def _multicast(self, node: SimNode, msg: Any, networks: tuple[int, ...]) -> None:
        size = self._size(msg) if self._count_bytes else 0
        me = node.node_id
        for dst in self._peers:
            if dst != me:
                self._send(node, dst, msg, networks, size)

    def _size(self, msg: Any) -> int:
        try:
            return encoded_size(msg)
        except EncodeError:
            return 0

    # ------------------------------------------------------------ network

    def _link(self, src: str, dst: str, msg: Any = None) -> _Link:
        if self._matched and (src, dst) in self._matched:
            cls = type(msg).__name__
            if any(r.match == cls for r in self._net.links if r.src == src and r.dst == dst):
                return self._class_link(src, dst, cls)
        link = self._links.get((src, dst))
        if link is None:
            net = self._net
            lat, loss, dup = net.latency, net.loss, net.duplication
            for rule in net.links:
                if rule.src == src and rule.dst == dst and rule.match is None:
                    lat = rule.latency or lat
                    loss = rule.loss if rule.loss is not None else loss
                    dup = rule.duplication if rule.duplication is not None else dup
            link = self._links[(src, dst)] = _Link(
                lat, loss, dup, stream(self.seed, f"link:{src}->{dst}")
            )
        return link

    def _class_link(self, src: str, dst: str, cls: str) -> _Link:
        """The link ``src`` -> ``dst`` for messages of class ``cls``: the link's own
        rules overlaid with those matching ``cls``, with a random stream of its own."""
        link = self._class_links.get((src, dst, cls))
        if link is None:
            base = self._link(src, dst)
            lat, loss, dup = base.latency, base.loss, base.duplication
            for rule in self._net.links:
                if rule.src == src and rule.dst == dst and rule.match == cls:
                    lat = rule.latency or lat
                    loss = rule.loss if rule.loss is not None else loss
                    dup = rule.duplication if rule.duplication is not None else dup
            link = self._class_links[(src, dst, cls)] = _Link(
                lat, loss, dup, stream(self.seed, f"link:{src}->{dst}:{cls}")
            )
        return link

    def _send(
        self,
        node: SimNode,
        dst: str,
        msg: Any,
        networks: tuple[int, ...],
        size: int | None = None,
    ) -> None:
        """Put ``msg`` from ``node`` to ``dst`` on each of ``networks`` through the modelled
        network (``size``: its encoded bytes, when a multicast counted them already)."""
        if size is None:
            size = self._size(msg) if self._count_bytes else 0
        src = node.node_id
        net_model = self._net
        sent = msg
        for net in networks:
            msg = sent  # each network's copy starts as sent (tampering changes one copy)
            node.sent += 1
            node.sent_bytes += size
            target = self.nodes.get(dst)
            if target is None:
                node.lost += 1
                self.rec.add(
                    src,
                    self.sched.now,
                    "drop",
                    detail={"reason": "unknown destination", "dst": dst},
                    network=net,
                )
                continue
            if self._impaired:  # a partition, a cut or a link down somewhere
                reason = self._unreachable(src, dst, net)
                if reason is not None:
                    node.lost += 1
                    if self._packets:
                        self._lost(src, dst, net, reason)
                    continue
            if size > net_model.max_datagram > 0:
                # Like UDP, the network refuses a datagram larger than it can carry.
                node.lost += 1
                self.rec.add(
                    src,
                    self.sched.now,
                    "drop",
                    detail={"reason": "oversized datagram", "dst": dst, "bytes": size},
                    network=net,
                )
                continue
            if self._drops and self._dropped_by_rule(src, dst, msg):
                node.lost += 1
                if self._packets:
                    self._lost(src, dst, net, "drop rule")
                continue
            link = self._links.get((src, dst))
            if link is None or self._matched:  # not built yet, or rules per message class
                link = self._link(src, dst, msg)
            rng = link.rng
            if link.loss and rng.random() < link.loss:
                node.lost += 1
                if self._packets:
                    self._lost(src, dst, net, "loss")
                continue
            if self._tampering:
                msg = self._tampered(node, dst, msg, net, rng)
                if msg is None:
                    continue
            copies = 2 if link.duplication and rng.random() < link.duplication else 1
            for _ in range(copies):
                delay = link.latency.sample(rng)
                if net_model.reorder and rng.random() < net_model.reorder:
                    delay += rng.randint(0, net_model.reorder_delay)
                self.sched.call_at(self.sched.now + delay, self._arrive, target, src, msg, net)

    def _tampered(
        self, node: SimNode, dst: str, msg: Any, net: int, rng: random.Random
    ) -> Any | None:
        """``msg`` after the network's per-network loss, the sender's garbling and the
        network's corruption (None: lost, and counted as such)."""
        src = node.node_id
        per_net = self._net.loss_per_network
        if per_net and per_net[net] and rng.random() < per_net[net]:
            node.lost += 1
            if self._packets:
                self._lost(src, dst, net, "network loss")
            return None
        share = self._garbling.get(src)
        if share is not None and rng.random() < share:
            self._garbled += 1
            msg = garbled(msg, src, rng)
            if msg is None:  # the hostile value does not encode: a receiver drops it
                node.lost += 1
                if self._packets:
                    self._lost(src, dst, net, "garbled")
                return None
        net_model = self._net
        if net_model.corrupt and rng.random() < net_model.corrupt:
            msg = self._corrupted(msg, src, rng)
            if msg is None:  # the flipped bytes no longer decode: the receiver drops it
                node.lost += 1
                if self._packets:
                    self._lost(src, dst, net, "corrupt")
                return None
        return msg

    def _unreachable(self, src: str, dst: str, net: int) -> str | None:
        """Why the network cannot carry a packet from ``src`` to ``dst`` on ``net``, or
        None when it can."""
        if (src, net) in self._links_down or (dst, net) in self._links_down:
            return "link down"
        if self._component[src] != self._component[dst]:
            return "partition"
        if (src, dst) in self._cuts:
            return "cut"
        return None

    def _note_faults(self) -> None:
        """Keep the flags that let a packet skip the checks of faults that are not there:
        :attr:`_impaired` (a partition, a cut or a link down) and :attr:`_tampering`
        (per-network loss, a garbling sender or corruption)."""
        self._impaired = bool(
            self._links_down or self._cuts or len(set(self._component.values())) > 1
        )
        self._tampering = bool(self._net.loss_per_network or self._garbling or self._net.corrupt)

    def _lost(self, src: str, dst: str, net: int, reason: str) -> None:
        """Packet tracing: the ``drop`` row of a packet the modelled network lost."""
        detail = {"reason": reason, "dst": dst}
        self.rec.add(src, self.sched.now, "drop", detail=detail, network=net)

    @staticmethod
    def _corrupted(msg: Any, src: str, rng: random.Random) -> Any:
        """``msg`` as it arrives after 1 to 4 random bytes of its encoded frame (past the
        magic and version) were flipped in flight; None if it no longer decodes."""
        try:
            data = bytearray(encode(msg, sender=src))
        except EncodeError:
            return None
        head = min(3, len(data) - 1)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(head, len(data))
            data[i] ^= rng.randint(1, 255)
        try:
            return decode(bytes(data)).msg
        except DecodeError:
            return None

    def _dropped_by_rule(self, src: str, dst: str, msg: Any) -> bool:
        counts = self._drop_counts
        for k, rule in enumerate(self._drops):
            if (
                rule.src == src
                and rule.dst == dst
                and (rule.match is None or type(msg).__name__ == rule.match)
            ):
                counts[k] += 1
                if counts[k] == rule.nth:
                    return True
        return False

    def _arrive(self, node: SimNode, src: str, msg: Any, net: int) -> None:
        state = node.state
        if state is UP:
            node.received += 1
            now = self.sched.now
            if self._packets:
                node.interp.packet_in(src, msg, net, now)
            # _feed's body, written out: this is the simulator's most frequent event
            effects = node.machine.handle(Received(src, msg, net), now)  # type: ignore[union-attr]
            if effects:
                node.interp.apply(effects, now)
        elif state is PAUSED:
            node.queue.append(("recv", src, msg, net))

    def _timer(self, node: SimNode, name: str, gen: int) -> None:
        if node.timers.get(name) != gen:
            return
        if node.state is PAUSED:
            node.queue.append(("timer", name, gen))
            return
        del node.timers[name]
        self._feed(node, TimerFired(name))

    # ------------------------------------------------------------ workload

    def _workload_tick(self, run: _WorkloadRun) -> None:
        now = self.sched.now
        if (run.end is not None and now >= run.end) or run.remaining == 0 or now > self.sc.duration:
            return
        node = self.nodes[run.node]
        wl = run.wl
        if node.state is UP:
            if wl.kind == "multicast":
                for _ in range(SATURATING_BURST if wl.rate == 0 else 1):
                    if run.remaining == 0 or node.state is not UP:
                        break
                    if node.interp.blocked:
                        run.waiting = True
                        node.waiting.append(run)
                        return
                    node.counter += 1
                    msg_id = f"{node.node_id}:{node.counter}"
                    payload = (
                        msg_id.encode().ljust(wl.size, b".")[: max(wl.size, 0)] if wl.size else b""
                    )
                    self._feed(node, node.interp.submit(msg_id, payload, wl.order, now))
                    if run.remaining is not None:
                        run.remaining -= 1
            elif not node.interp.holds_lock and not node.lock_pending:
                node.lock_pending = True
                self._feed(node, node.interp.lock_request(now))
                if run.remaining is not None:
                    run.remaining -= 1
        if wl.rate == 0:  # saturating: the next burst
            self.sched.call_at(now + SATURATING_TICK, self._workload_tick, run)
            return
        interval = 1e9 / wl.rate
        if wl.arrivals == "poisson":
            interval = run.rng.expovariate(1.0 / interval)
        self.sched.call_at(now + max(1, int(interval)), self._workload_tick, run)

    def _lock_hold(self, n: str) -> int:
        for wl in self.sc.workloads:
            if wl.kind == "lock" and n in wl.nodes:
                return wl.hold
        return 1_000_000

    def _lock_release(self, node: SimNode, incarnation: int) -> None:
        if node.incarnation == incarnation and node.state is UP and node.interp.holds_lock:
            self._feed(node, LockRelease())

    # ------------------------------------------------------------ nemesis

    def _fault(self, n: str, action: Action, **extra: Any) -> None:
        self.rec.add(n, self.sched.now, "fault", detail={"action": action.action, **extra})

    def _nemesis(self, a: Action) -> None:
        self._carry_out(a)
        self._note_faults()

    def _carry_out(self, a: Action) -> None:
        act = a.action
        if act == "cut":
            self._cuts.update((s, d) for s in a.cut_from for d in a.cut_to if s != d)
            for n in sorted({*a.cut_from, *a.cut_to}):
                self._fault(n, a, cut_from=list(a.cut_from), cut_to=list(a.cut_to))
            return
        if act in ("partition", "heal"):
            if act == "heal":
                self._cuts.clear()
            if act == "partition":
                listed = {n for g in a.groups for n in g}
                for gi, g in enumerate(a.groups, start=1):
                    for n in g:
                        self._component[n] = gi
                for n in self.sc.all_nodes:
                    if n not in listed:
                        self._component[n] = 0
            else:
                self._component = dict.fromkeys(self.sc.all_nodes, 0)
            groups = [list(g) for g in a.groups]
            for n in self.sc.all_nodes:
                self._fault(n, a, **({"groups": groups} if groups else {}))
            return
        assert a.node is not None
        node = self.nodes[a.node]
        if act in ("link_down", "link_up"):
            assert a.network is not None
            if act == "link_down":
                self._links_down.add((a.node, a.network))
            else:
                self._links_down.discard((a.node, a.network))
            self._fault(a.node, a, network=a.network)
            return
        if act in ("garble", "ungarble"):
            if act == "garble":
                self._garbling[a.node] = a.share
                self._fault(a.node, a, share=a.share)
            else:
                self._garbling.pop(a.node, None)
                self._fault(a.node, a)
            return
        self._fault(a.node, a)
        if act == "crash":
            self._halt(node, CRASHED)
        elif act == "restart":
            self._boot(a.node, a.node not in self.sc.nodes)
        elif act == "join":
            self._boot(a.node, True)
        elif act == "pause":
            node.state = PAUSED
        elif act == "resume":
            node.state = UP
            queued, node.queue = node.queue, []
            for item in queued:
                if node.state is not UP:
                    break
                if item[0] == "recv":
                    self._arrive(node, item[1], item[2], item[3])
                else:
                    self._timer(node, item[1], item[2])
        elif act == "leave":
            if node.state is UP:
                self._feed(node, Stop())
            if a.linger and node.state is UP:
                # A graceful leave that lets the machine finish its leave protocol
                # (say, wait for view acknowledgements) before the process is gone.
                self.sched.call_at(
                    self.sched.now + a.linger, self._linger_end, node, node.incarnation
                )
            else:
                self._halt(node, LEFT)

    def _linger_end(self, node: SimNode, incarnation: int) -> None:
        if node.incarnation == incarnation and node.state is not LEFT:
            self._halt(node, LEFT)

    def _halt(self, node: SimNode, state: str) -> None:
        node.interp.lock_lost(state, self.sched.now)
        node.interp.reset()
        node.state = state
        node.machine = None
        node.timers.clear()
        node.queue.clear()
        node.lock_pending = False
        for run in node.waiting:
            run.waiting = False
            self.sched.call_at(self.sched.now, self._workload_tick, run)
        node.waiting = []


class _SimIO:
    """The simulator's side of the :class:`~ringcast.core.interpreter.HostIO`: the
    modelled network, virtual-time timers, the node's stable storage, and the
    workload as the application."""

    __slots__ = ("multicast", "node", "send", "set_timer", "world")

    def __init__(self, world: Simulation, node: SimNode):
        self.world = world
        self.node = node
        # send(dst, msg, networks), multicast(msg, networks) and set_timer(name, delay),
        # bound to this node
        self.send = functools.partial(world._send, node)
        self.multicast = functools.partial(world._multicast, node)
        self.set_timer = functools.partial(world._set_timer, node)

    def cancel_timer(self, name: str) -> None:
        self.node.timers.pop(name, None)

    def persist(self, key: str, value: bytes) -> None:
        self.node.storage[key] = value

    def on_deliver(self, d: Deliver) -> None:
        return None

    def on_view(self, v: View) -> None:
        return None

    def on_leader(self, leader: str | None, view: str | None) -> None:
        return None

    def on_lock(self, granted: bool, reason: str) -> None:
        if granted:
            self.world._lock_granted(self.node)

    def on_backpressure(self, blocked: bool) -> None:
        if not blocked:
            self.world._unblocked(self.node)
