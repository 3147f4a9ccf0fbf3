"""The one effect interpreter: what every host does with a machine's effects.

The simulator and the asyncio runtime host the same machines. What they share, they
share here: which networks a packet goes out on, which trace rows the host writes for
a delivery, a view, a leader, a state, the lock, a submit, and what the application is
told. A host supplies only the I/O it owns, as a :class:`HostIO`:

- ``send(dst, msg, networks)`` / ``multicast(msg, networks)``: put one message on the
  wire (the simulator's modelled network, the runtime's sealed UDP datagrams);
- ``set_timer(name, delay)`` / ``cancel_timer(name)``: its clock;
- ``persist(key, value)``: its stable storage;
- ``on_deliver`` / ``on_view`` / ``on_leader`` / ``on_lock`` / ``on_backpressure``:
  the application (the simulator's workload, the runtime's :class:`~ringcast.Group`);

and a :class:`~ringcast.trace.rows.TraceSink` (or None: no trace), the node's rows of
the trace schema (collected by the simulator's recorder, the runtime's rotating
segment log). Trace rows written here, for every host alike:

========== ===================================================================
kind       written for
========== ===================================================================
submit     :meth:`Interpreter.submit` (the host assigns the message id)
deliver    ``Deliver``: msg, order, size; no detail (the sender is the id's prefix)
view       ``InstallView``: view, members, transitional
leader     ``LeaderChanged``: view, ``{"leader": ...}``
state      ``StateChanged``: its fields as detail
lock       :meth:`Interpreter.lock_request`, ``LockGranted`` (with its fence),
           ``LockReleased``
drop       a packet for a network the node does not have (``network``: the one asked)
send       with packet tracing: each ``Send``/``Multicast``, once a network it goes
           out on (``network``), the encoded body's ``size``, ``{"dst", "type"}``
recv       with packet tracing: :meth:`Interpreter.packet_in`, which the host calls
           for each packet it hands to the machine (``network``: where it came in)
invariant  an effect the interpreter does not know (a protocol bug; never a crash)
(any)      ``Record(kind, fields)``: column-named fields fill columns, the rest detail
========== ===================================================================

Only packet rows (send, recv, and the drops of packets, here and in the hosts) fill
the ``network`` column.
"""

from __future__ import annotations

from typing import Any, Protocol

from ringcast.core.codec import EncodeError, encoded_size
from ringcast.core.effects import (
    EVERY_NETWORK,
    Backpressure,
    CancelTimer,
    Deliver,
    Effect,
    InstallView,
    LeaderChanged,
    LockGranted,
    LockReleased,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
    StateChanged,
)
from ringcast.core.events import LockRequest, Submit
from ringcast.core.ids import NodeId, View
from ringcast.core.tracerows import TraceSink, host_detail, record_columns


class HostIO(Protocol):
    """The I/O a host owns; the :class:`Interpreter` decides everything else."""

    def send(self, dst: NodeId, msg: Any, networks: tuple[int, ...]) -> None: ...
    def multicast(self, msg: Any, networks: tuple[int, ...]) -> None: ...
    def set_timer(self, name: str, delay: int) -> None: ...
    def cancel_timer(self, name: str) -> None: ...
    def persist(self, key: str, value: bytes) -> None: ...
    def on_deliver(self, d: Deliver) -> None: ...
    def on_view(self, v: View) -> None: ...
    def on_leader(self, leader: NodeId | None, view: str | None) -> None: ...
    def on_lock(self, granted: bool, reason: str) -> None: ...
    def on_backpressure(self, blocked: bool) -> None: ...


_FIRST = (0,)
_REQUESTED = host_detail({"op": "requested"})


class Interpreter:
    """Carries out one node's effects through its host's :class:`HostIO`.

    It also keeps what the application and the status page see of the node: the
    installed :attr:`view`, the :attr:`leader` the protocol names, the protocol's
    :attr:`state`, whether it :attr:`holds_lock`, whether flow control has it
    :attr:`blocked`, and counters of deliveries, views and token passes.
    """

    __slots__ = (
        "_all",
        "blocked",
        "delivered",
        "drops",
        "fence",
        "holds_lock",
        "io",
        "leader",
        "leader_named",
        "networks",
        "node_id",
        "packets",
        "state",
        "tokens",
        "trace",
        "view",
        "views",
    )

    def __init__(
        self,
        node_id: NodeId,
        io: HostIO,
        trace: TraceSink | None,
        *,
        networks: int = 1,
        packets: bool = False,
    ):
        self.node_id = node_id
        self.io = io
        self.trace = trace
        self.networks = networks
        self.packets = packets
        """Packet tracing: a ``send`` row per packet and network, ``recv`` rows through
        :meth:`packet_in` (the host calls it only when this is set)."""
        self._all = tuple(range(networks))
        self.view: View | None = None
        self.leader: NodeId | None = None
        self.leader_named = False
        """True once the protocol named a leader (some protocols never do)."""
        self.state: dict[str, Any] = {}
        self.holds_lock = False
        self.fence = 0
        """The fencing token of the last lock grant (0: the protocol gives none)."""
        self.blocked = False
        self.delivered = 0
        self.views = 0
        self.tokens = 0
        self.drops: dict[str, int] = {}
        """The protocol's ``drop`` records by reason (a received message, a submit or a
        timer it threw away): see :func:`drop_key`."""

    # ------------------------------------------------------------ host-initiated

    def submit(self, msg_id: str, payload: bytes, order: str, now: int) -> Submit:
        """Record the application's multicast and return the event for the machine."""
        if self.trace is not None:
            self.trace.add(now, "submit", msg_id, order, size=len(payload))
        return Submit(msg_id, payload, order)

    def lock_request(self, now: int) -> LockRequest:
        """Record the application's lock request and return the event for the machine."""
        if self.trace is not None:
            self.trace.add(now, "lock", detail=_REQUESTED)
        return LockRequest()

    def lock_lost(self, reason: str, now: int) -> None:
        """The node stopped (crash, leave) while holding the lock: record its release."""
        if self.holds_lock:
            self.holds_lock = False
            if self.trace is not None:
                released = host_detail({"op": "released", "reason": reason})
                self.trace.add(now, "lock", detail=released)

    def packet_in(self, src: NodeId, msg: Any, network: int, now: int) -> None:
        """Record a packet the host is about to hand to the machine (packet tracing)."""
        if self.trace is not None:
            detail = host_detail({"src": src, "type": type(msg).__name__})
            self.trace.add(now, "recv", size=_body_size(msg), detail=detail, network=network)

    def reset(self) -> None:
        """The node's machine is gone (crash, leave): nothing of it is held any more."""
        self.holds_lock = False
        self.blocked = False

    # ------------------------------------------------------------ effects

    def apply(self, effects: list[Effect], now: int) -> None:
        """Carry out ``effects`` in order (the most frequent kinds tested first)."""
        io = self.io
        trace = self.trace
        eff: Any  # told apart by exact type below (the fastest test; mypy does not narrow on it)
        for eff in effects:
            tp = type(eff)
            if tp is Deliver:
                self.delivered += 1
                if trace is not None:
                    trace.add(
                        now, "deliver", eff.msg_id, eff.order, None, None, None, len(eff.payload)
                    )
                io.on_deliver(eff)
            elif tp is Send or tp is Multicast:
                network = eff.network
                nets: tuple[int, ...]
                if network is None:
                    nets = _FIRST
                elif network == EVERY_NETWORK:
                    nets = self._all
                elif 0 <= network < self.networks:
                    nets = (network,)
                else:
                    self._unknown_network(eff, now)
                    continue
                if self.packets and trace is not None:
                    self._packet_out(eff, nets, now)
                if tp is Send:
                    io.send(eff.dst, eff.msg, nets)
                else:
                    io.multicast(eff.msg, nets)
            elif tp is Record:
                if eff.kind == "token":
                    self.tokens += 1
                elif eff.kind == "drop":
                    key = drop_key(eff.fields.get("reason"), self.drops)
                    self.drops[key] = self.drops.get(key, 0) + 1
                if trace is not None:
                    fields = eff.fields
                    if fields:
                        cols, detail = record_columns(fields)
                        trace.add(now, eff.kind, detail=detail, **cols)
                    else:
                        trace.add(now, eff.kind)
            elif tp is SetTimer:
                io.set_timer(eff.name, eff.delay)
            elif tp is CancelTimer:
                io.cancel_timer(eff.name)
            elif tp is InstallView:
                v = eff.view
                self.view = v
                self.views += 1
                if trace is not None:
                    members = list(v.members)
                    trace.add(
                        now, "view", view=v.view_id, members=members, transitional=v.transitional
                    )
                io.on_view(v)
            elif tp is LeaderChanged:
                self.leader = eff.leader
                self.leader_named = True
                if trace is not None:
                    trace.add(
                        now, "leader", view=eff.view, detail=host_detail({"leader": eff.leader})
                    )
                io.on_leader(eff.leader, eff.view)
            elif tp is StateChanged:
                fields = eff.fields
                self.state = {
                    k: v for k, v in fields.items() if isinstance(v, str | int | float | bool)
                }
                if trace is not None:
                    trace.add(now, "state", detail=host_detail(fields))
            elif tp is Persist:
                io.persist(eff.key, eff.value)
            elif tp is LockGranted:
                self.holds_lock = True
                self.fence = eff.fence
                if trace is not None:
                    granted = host_detail({"op": "granted", "fence": eff.fence})
                    trace.add(now, "lock", detail=granted)
                io.on_lock(True, "granted")
            elif tp is LockReleased:
                self.holds_lock = False
                reason = eff.reason
                if trace is not None:
                    released = host_detail({"op": "released", "reason": reason})
                    trace.add(now, "lock", detail=released)
                io.on_lock(False, reason)
            elif tp is Backpressure:
                self.blocked = eff.blocked
                io.on_backpressure(eff.blocked)
            elif trace is not None:
                detail = host_detail({"error": "unknown effect", "effect": repr(eff)[:200]})
                trace.add(now, "invariant", detail=detail)

    def _unknown_network(self, eff: Send | Multicast, now: int) -> None:
        if self.trace is not None:
            detail = {
                "reason": "unknown network",
                "network": eff.network,
                "networks": self.networks,
            }
            self.trace.add(now, "drop", detail=host_detail(detail), network=eff.network)

    def _packet_out(self, eff: Send | Multicast, nets: tuple[int, ...], now: int) -> None:
        """The ``send`` rows of one packet: one a network it goes out on."""
        trace = self.trace
        assert trace is not None
        msg = eff.msg
        fields = {"type": type(msg).__name__}
        if type(eff) is Send:
            fields["dst"] = eff.dst
        detail = host_detail(fields)
        size = _body_size(msg)
        for net in nets:
            trace.add(now, "send", size=size, detail=detail, network=net)


MAX_DROP_KEYS = 64


def drop_key(reason: Any, seen: dict[str, int]) -> str:
    """The counter a ``drop`` record's reason goes to: its first clause (the reasons name
    a message type and then values), ``other`` once MAX_DROP_KEYS are counted."""
    key = str(reason).split(":", 1)[0].strip() if reason else "unspecified"
    if key not in seen and len(seen) >= MAX_DROP_KEYS:
        return "other"
    return key


def _body_size(msg: Any) -> int | None:
    """The bytes of ``msg``'s encoded body (the wire codec's, without the frame header
    and the runtime's security envelope), or None when it cannot be encoded."""
    try:
        return encoded_size(msg)
    except EncodeError:
        return None
