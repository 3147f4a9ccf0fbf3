"""The asyncio host: runs one protocol machine on real UDP sockets.

It mirrors :class:`ringcast.sim.world.Simulation`: events in, effects carried out.
Timers come from the event loop's monotonic clock; ``Persist`` goes to a
:class:`~ringcast.runtime.storage.StateStore`; every datagram is sealed and opened
by :mod:`ringcast.runtime.security`; trace rows go to a
:class:`~ringcast.runtime.tracelog.TraceLog`. What the application must see
(deliveries, views, the lock, flow control) goes to a :class:`HostListener`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

from ringcast.core.codec import DecodeError, EncodeError, cluster_id_of, decode, encode
from ringcast.core.effects import Deliver
from ringcast.core.events import Event, LockRelease, Received, Start, Stop, TimerFired
from ringcast.core.ids import View
from ringcast.core.interpreter import Interpreter
from ringcast.core.machine import Machine, MachineContext
from ringcast.protocols import registry
from ringcast.runtime.config import ClusterConfig
from ringcast.runtime.errors import AddressInUse, KeyFileError
from ringcast.runtime.log import RateLimit, node_logger
from ringcast.runtime.metrics import Metrics
from ringcast.runtime.security import (
    Dropped,
    Opener,
    Sealer,
    check_nonce_tails,
    key_id,
    read_key_file,
)
from ringcast.runtime.storage import Reservation, StateStore
from ringcast.runtime.tracelog import TraceLog, detail_json
from ringcast.runtime.transport import UdpTransport

_HOST_KEYS = "host."


class HostListener(Protocol):
    """What the application side of a host is told. Callbacks must not call back in."""

    def on_deliver(self, d: Deliver) -> None: ...
    def on_view(self, v: View) -> None: ...
    def on_leader(self, leader: str | None, view: str | None) -> None: ...
    def on_lock(self, granted: bool, reason: str) -> None: ...
    def on_backpressure(self, blocked: bool) -> None: ...


class NodeHost:
    """One node of a cluster: a machine, its sockets, timers, storage and trace."""

    def __init__(
        self,
        config: ClusterConfig,
        node_id: str,
        *,
        listener: HostListener | None = None,
        trace: bool = True,
    ):
        self.config = config
        self.node = config.node(node_id)
        self.node_id = node_id
        self.listener = listener
        self.spec = registry.get(config.protocol)
        self.metrics = Metrics()
        self.log = node_logger(node_id)
        self.running = False
        self.key_id: str | None = None
        """The cluster key's public fingerprint (:func:`~ringcast.runtime.security.key_id`)."""
        self._trace_on = trace and config.trace_dir is not None
        self._cluster_id = cluster_id_of(config.name)
        self._addr = {n.node_id: n.addresses for n in config.nodes}
        # udpu fan-out: the other nodes' addresses, per network (a frame is encoded and
        # sealed once per multicast, then sent to each).
        self._fanout = [
            [n.addresses[net] for n in config.nodes if n.node_id != node_id]
            for net in range(config.networks)
        ]
        # The machine's timers: name -> deadline (loop time, seconds). One loop timer,
        # armed for the earliest deadline, serves them all (see _arm).
        self._timers: dict[str, float] = {}
        self._wake: asyncio.TimerHandle | None = None
        self._wake_at = 0.0
        self._waiters: list[asyncio.Future[None]] = []
        self._machine: Machine | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport: UdpTransport | None = None
        self._trace: TraceLog | None = None
        self._spill: Callable[[], None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._warn = RateLimit()
        self._told: set[str] = set()
        self._mcast = config.transport == "multicast"
        self._rearm = False
        self.interp = Interpreter(
            node_id,
            _RuntimeIO(self),
            None,
            networks=config.networks,
            packets=config.trace_packets,
        )
        """The shared effect interpreter; it holds the view, leader, lock and flow state."""

    # ------------------------------------------------------------ what the application sees

    @property
    def view(self) -> View | None:
        return self.interp.view

    @property
    def leader(self) -> str | None:
        """The leader the protocol names (``LeaderChanged``); for a protocol that names
        none, the first member of the current regular view (the same at every node of
        the view, never kept from an earlier one)."""
        interp = self.interp
        if interp.leader_named:
            return interp.leader
        v = interp.view
        return v.leader if v is not None and not v.transitional else interp.leader

    @property
    def state(self) -> dict[str, Any]:
        return self.interp.state

    @property
    def blocked(self) -> bool:
        return self.interp.blocked

    @property
    def holds_lock(self) -> bool:
        return self.interp.holds_lock

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open storage, trace and sockets, build the machine and feed it ``Start``."""
        cfg = self.config
        try:
            key = read_key_file(cfg.key_file)
        except KeyFileError as e:
            raise KeyFileError(f"node {self.node_id}: {e}") from None
        self.key_id = key_id(key)
        if cfg.security == "aes-gcm":
            check_nonce_tails(cfg.peers)
        # The sockets first: a node whose address another process holds fails before it
        # touches its storage or trace. Datagrams that come before the machine is built
        # are counted and dropped (``running`` is still false).
        self._loop = asyncio.get_running_loop()
        self._transport = UdpTransport(
            self.node.addresses,
            groups=cfg.multicast if self._mcast else (),
            udp_offload=cfg.udp_offload,
        )
        try:
            await self._transport.open(self._on_datagram)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            addrs = ", ".join(f"{h}:{p}" for h, p in self.node.addresses)
            raise AddressInUse(
                f"node {self.node_id}: address {addrs} is already in use: is node "
                f"{self.node_id} already running (`ringcast cluster up` starts every node "
                "of its file but those it writes with --app-members)? Join as a node "
                "that is not running, or stop the process that holds the port"
            ) from None
        try:
            self.store = StateStore(cfg.state_dir / self.node_id)
            storage = {k: v for k, v in self.store.load().items() if not k.startswith(_HOST_KEYS)}
            restart = bool(storage)
            self._msg_counter = Reservation(self.store, "msg_counter", block=1 << 16, floor=1)
            self._seq = Reservation(self.store, "seq", block=1 << 20, floor=time.time_ns())
            boot = self.store.get("host.boots")
            self.boot = int(boot) + 1 if boot else 1
            self.store.put("host.boots", str(self.boot).encode())
            self._sealer = Sealer(key, cfg.security, self._cluster_id, self.node_id)
            self._opener = Opener(key, cfg.security, self._cluster_id, cfg.peers, self.node_id)
            if self._trace_on:
                assert cfg.trace_dir is not None
                self._trace = TraceLog(
                    cfg.trace_dir,
                    run=cfg.run_id,
                    node=self.node_id,
                    fmt=cfg.trace_format,
                    origin_ns=cfg.origin_ns,
                    store=self.store,
                    boot=self.boot,
                    rotate_ns=cfg.trace_rotate_ns,
                    protocol=cfg.protocol,
                    origin_clock=cfg.origin_clock,
                    write_through=cfg.trace_write_through,
                )
                if cfg.trace_write_through:
                    self._spill = self._trace.spill
                self.interp.trace = self._trace.sink
        except BaseException:
            self._transport.close()
            raise
        ctx = MachineContext(
            node_id=self.node_id,
            members=cfg.members,
            peers=cfg.peers,
            settings=cfg.settings,
            storage=storage,
            networks=cfg.networks,
            joining=self.node.join,
            seed=int.from_bytes(os.urandom(8), "big"),
        )
        self._machine = self.spec.factory(ctx)
        self.running = True
        if restart:
            self._row("fault", detail=detail_json({"action": "restart", "boot": self.boot}))
        self.log.info(
            "node started",
            fields={"protocol": cfg.protocol, "boot": self.boot, "cluster": cfg.name},
        )
        self._feed(Start())
        self._ticker = asyncio.create_task(self._tick_loop())

    async def stop(self, *, graceful: bool = True) -> None:
        """Leave the group (``Stop``) if ``graceful``, then close everything."""
        if not self.running:
            return
        if graceful:
            self._row("fault", detail=detail_json({"action": "leave"}))
            self._feed(Stop())
        self.running = False
        self._timers.clear()
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self._transport is not None:
            self.metrics.packets_out = self._transport.packets_out
            self._transport.close()
        stats = self._metrics()
        stats.pop("rates", None)
        self._row("stats", detail=detail_json(stats))
        if self._trace is not None:
            await asyncio.to_thread(self._trace.close)
        self.log.info("node stopped", fields={"graceful": graceful})
        self._notify()

    async def _tick_loop(self) -> None:
        period = min(1.0, self.config.trace_rotate_ns / 1e9)
        while True:
            await asyncio.sleep(period)
            if self._transport is not None:
                self.metrics.packets_out = self._transport.packets_out
                self.metrics.bytes_out = self._transport.bytes_out
                self.metrics.send_drops["send_buffer_full"] = self._transport.dropped_full
                self.metrics.send_drops["send_refused"] = self._transport.send_errors
            self._sync_counters()
            self.metrics.sample()
            if self._trace is not None:
                self._trace.tick()

    # ------------------------------------------------------------ application side

    def next_msg_id(self) -> str:
        return f"{self.node_id}:{self._msg_counter.take()}"

    def submit(self, payload: bytes, order: str = "agreed") -> str:
        """Hand one application multicast to the machine; returns its message id."""
        if not self.running:
            raise RuntimeError(f"node {self.node_id} is not running")
        msg_id = self.next_msg_id()
        self.metrics.submitted += 1
        self._feed(self.interp.submit(msg_id, payload, order, self._now()))
        return msg_id

    def lock_request(self) -> None:
        self._feed(self.interp.lock_request(self._now()))

    def lock_release(self) -> None:
        self._feed(LockRelease())

    def _sync_counters(self) -> None:
        """Counters the interpreter keeps, copied into the metrics when they are read."""
        self.metrics.tokens = self.interp.tokens
        self.metrics.delivered = self.interp.delivered
        self.metrics.protocol_drops = self.interp.drops

    def _metrics(self) -> dict[str, Any]:
        self._sync_counters()
        return self.metrics.as_dict()

    def status(self) -> dict[str, Any]:
        v = self.view
        return {
            "node": self.node_id,
            "cluster": self.config.name,
            "protocol": self.config.protocol,
            "boot": getattr(self, "boot", 0),
            "key_id": self.key_id,
            "running": self.running,
            "view": None
            if v is None
            else {"id": v.view_id, "members": list(v.members), "transitional": v.transitional},
            "leader": self.leader,
            "state": self.state,
            "blocked": self.blocked,
            "holds_lock": self.holds_lock,
            "fence": self.interp.fence,
            "metrics": self._metrics(),
        }

    # ------------------------------------------------------------ machine plumbing

    def _now(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1_000_000_000)

    def _feed(self, event: Event) -> None:
        machine = self._machine
        if machine is None or not self.running:
            return
        now = self._now()
        effects = machine.handle(event, now)
        if effects:
            self._apply(effects, now)
        if self._waiters:
            self._notify()

    def changed(self) -> asyncio.Future[None]:
        """A future done at the host's next change of state: a datagram taken in (or
        dropped), an event handled by the machine (its effects carried out), the stop.

        For waiting on a condition without polling: check it, await ``changed()``,
        check again (see ``Group.wait_for``). A waiter that gives up cancels its future.
        """
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def _on_datagram(self, data: bytes, network: int) -> None:
        """Open, decode and hand one datagram to the machine, or drop it under a reason:
        every datagram counted in ``packets_in`` is counted once more, in ``handled`` or
        in ``drops`` (docs/runtime.md, "Security")."""
        m = self.metrics
        m.packets_in += 1
        m.bytes_in += len(data)
        if self._waiters:
            self._notify()  # counters moved (a drop is a change too)
        try:
            if not self.running:
                raise Dropped("not_running")
            sender, body = self._opener.open(data)
            try:
                frame = decode(body)
            except DecodeError:
                raise Dropped("malformed") from None
            if frame.cluster_id != self._cluster_id:
                raise Dropped("foreign_cluster")
            if frame.sender != sender:
                raise Dropped("sender_mismatch")
        except Dropped as d:
            m.drop(d.reason)
            if self.interp.packets:
                self._row("drop", detail=detail_json({"reason": d.reason}), network=network)
            if d.detail and d.reason not in self._told:
                self._told.add(d.reason)  # once a reason: what to do about it
                self.log.warning(d.detail, fields={"reason": d.reason})
            if self._warn.ready() and not (d.reason == "own_packet" and self._mcast):
                # (in multicast mode a node reads each of its own multicasts back)
                self.log.warning(
                    "dropped packets", fields={"reason": d.reason, "drops": dict(m.drops)}
                )
            return
        m.handled += 1
        if self.interp.packets:
            self.interp.packet_in(sender, frame.msg, network, self._now())
        try:
            self._feed(Received(sender, frame.msg, network))
        except Exception:
            m.handler_errors += 1
            self.log.exception("protocol failed on a received message", fields={"src": sender})

    def _arm(self) -> None:
        """Make sure the one loop timer fires no later than the earliest deadline.

        A wake-up that is earlier than needed (the timer it was for was cancelled or
        pushed back) is left alone: it finds nothing due and re-arms. So re-arming
        the token timers on every visit costs no loop timer operation.
        """
        timers = self._timers
        if not timers:
            return
        first = min(timers.values())
        wake = self._wake
        if wake is not None:
            if self._wake_at <= first:
                return
            wake.cancel()
        assert self._loop is not None
        self._wake_at = first
        self._wake = self._loop.call_at(first, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        loop = self._loop
        assert loop is not None
        timers = self._timers
        # asyncio runs a timer up to one clock resolution early; count those as due.
        horizon = loop.time() + getattr(loop, "_clock_resolution", 1e-6)
        while self.running and timers:
            name = min(timers, key=timers.__getitem__)
            if timers[name] > horizon:
                break
            del timers[name]
            self._feed(TimerFired(name))
        if self.running:
            self._arm()

    def _packet(self, msg: Any) -> bytes | None:
        try:
            return encode(msg, sender=self.node_id, cluster_id=self._cluster_id)
        except EncodeError as e:
            self.log.error("cannot encode message", fields={"error": str(e)})
            return None

    def _send(self, dst: str, msg: Any, networks: tuple[int, ...]) -> None:
        addrs = self._addr.get(dst)
        tr = self._transport
        if addrs is None or tr is None:
            self.metrics.send_drops["unknown_destination"] += 1
            return
        frame = self._packet(msg)
        if frame is None:
            return
        for net in networks:
            tr.send(self._sealer.seal(frame, self._seq.take(), dst), addrs[net], net)

    def _multicast(self, msg: Any, networks: tuple[int, ...]) -> None:
        tr = self._transport
        frame = self._packet(msg)
        if frame is None or tr is None:
            return
        for net in networks:
            packet = self._sealer.seal(frame, self._seq.take())
            if self._mcast:
                tr.multicast(packet, net)
            else:
                for addr in self._fanout[net]:
                    tr.send(packet, addr, net)

    def _apply(self, effects: list[Any], now: int | None = None) -> None:
        """Carry out ``effects`` (the shared interpreter), then re-arm the loop timer.

        The datagrams the effects send are held until all of them are carried out, then
        sent batched (``UdpTransport.cork``): a token visit's frames leave in one system
        call a peer where the platform allows it, and the token after them.
        """
        tr = self._transport
        if tr is not None:
            tr.cork()
        try:
            self.interp.apply(effects, self._now() if now is None else now)
        finally:
            if self._spill is not None:  # the event's rows before its datagrams
                self._spill()
            if tr is not None:
                tr.uncork()
        if self._rearm:
            self._rearm = False
            if self.running:
                self._arm()

    def _row(self, kind: str, **cols: Any) -> None:
        if self._trace is not None:
            self._trace.add(self._now(), kind, **cols)


class _RuntimeIO:
    """The runtime's side of the :class:`~ringcast.core.interpreter.HostIO`: sealed UDP
    datagrams, the event loop's clock, the state store, and the Group as application."""

    __slots__ = ("host", "on_deliver")

    def __init__(self, host: NodeHost):
        self.host = host
        listener = host.listener
        # a delivery goes straight to the application (counted by the interpreter)
        self.on_deliver = listener.on_deliver if listener is not None else _ignore

    def send(self, dst: str, msg: Any, networks: tuple[int, ...]) -> None:
        self.host._send(dst, msg, networks)

    def multicast(self, msg: Any, networks: tuple[int, ...]) -> None:
        self.host._multicast(msg, networks)

    def set_timer(self, name: str, delay: int) -> None:
        host = self.host
        assert host._loop is not None
        host._timers[name] = host._loop.time() + delay / 1e9
        host._rearm = True

    def cancel_timer(self, name: str) -> None:
        host = self.host
        if host._timers.pop(name, None) is not None:
            host._rearm = True

    def persist(self, key: str, value: bytes) -> None:
        self.host.store.put(key, value)

    def on_view(self, v: View) -> None:
        host = self.host
        host.metrics.views += 1
        host.log.info(
            "view installed",
            fields={"view": v.view_id, "members": list(v.members), "transitional": v.transitional},
        )
        if host.listener is not None:
            host.listener.on_view(v)

    def on_leader(self, leader: str | None, view: str | None) -> None:
        on_leader = getattr(self.host.listener, "on_leader", None)
        if on_leader is not None:  # (a listener written before leaders were events)
            on_leader(leader, view)

    def on_lock(self, granted: bool, reason: str) -> None:
        if self.host.listener is not None:
            self.host.listener.on_lock(granted, reason)

    def on_backpressure(self, blocked: bool) -> None:
        if self.host.listener is not None:
            self.host.listener.on_backpressure(blocked)


def _ignore(d: Deliver) -> None:
    return None
