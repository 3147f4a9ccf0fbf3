"""Totem's redundant ring: one single ring over several networks (the corosync Totem slides, the
redundant ring slides; Koch, Moser, Melliar-Smith, "The Totem Redundant Ring Protocol";
``docs/protocols/totem-rrp.md``).

:class:`RedundantRing` is a :class:`~ringcast.layers.base.Layer` stacked under the
unchanged single-ring machine (``Stack(TotemMachine, RedundantRing)``). The machine's
``Send`` and ``Multicast`` leave it with no network (``None``: "the layer below
decides"); this layer decides, per replication style (``rrp_mode``):

==============  ====================================================================
``active``      every packet on all N networks; the first copy is taken
``passive``     each packet on one network, in turn (tokens and frames counted apart)
``active_passive``  each packet on K of the N networks, in turn (1 < K < N)
==============  ====================================================================

Every packet travels in an :class:`RrpPacket` envelope (sender incarnation and packet
counter), so duplicates are dropped on the way up whatever the packet is. Faulty
networks are detected as corosync 2 does (``totemrrp.c``):

- active: a token copy that does not arrive on a network within
  ``rrp_token_expired_timeout`` (default: ``token_retransmit_timeout``) of the first
  copy adds one to that network's problem
  counter; at ``rrp_problem_count_threshold`` the network is faulty; every counter
  above zero decays by one each ``rrp_problem_count_timeout``;
- passive and active-passive: tokens and frames received are counted per network; a
  network more than ``rrp_problem_count_threshold`` tokens or
  ``rrp_problem_count_mcast_threshold`` frames behind the best one is faulty;
- passive and active-passive (ringcast's addition, counted in tokens, not packets): a
  network that carried none of the last ``rrp_token_turns`` x (N - K + 1) tokens this
  node received, and nothing at all for ``rrp_silence_timeout``, is faulty once the
  host has read its sockets again (:meth:`RedundantRing._confirm`). The predecessor
  sends its tokens on K of the N networks in turn, so a healthy network carries one in
  every N - K + 1; a dead one costs the ring a token retransmission at each of its
  turns, and is found after one turn instead of ``rrp_problem_count_threshold`` tokens.

A faulty network carries nothing of the ring. Every ``rrp_autorecovery_check_timeout``
the node sends a round of ``rrp_readmit_probes`` :class:`RingTest` probes along the
ring on it (knet's ``pong_count``: several good pings before a link is up); a probe
that comes back has gone round the whole ring, and when every probe of one round is
back the network is good again and an ``activate`` round re-admits it at every node.
A lossy network loses some probe of every round, so it stays out for as long as it is
lossy. Re-admission backs off: a network faulty again within ``rrp_flap_window`` of
its re-admission waits twice as long between rounds and needs twice as many probes a
round (up to :data:`MAX_BACKOFF` doublings), so a flapping network stays out instead
of flapping the ring. When every network
is faulty the node sends on all of them (a node is never left with none). Whatever
the style, a token the single ring sends again (its successor showed no sign of the
first) and the membership messages (``Join``, ``MergeDetect``) go on every network,
faulty ones included: a network that died unnoticed costs one token retransmission,
not the configuration.

Status: a ``fault`` record (``action`` ``network_faulty`` / ``network_healthy``) at each
change, and the protocol state (``StateChanged``) carries ``rrp_net<k>`` =
``healthy``/``faulty`` beside the single ring's fields for ``ringcast status``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from ringcast.core.effects import (
    CancelTimer,
    Effect,
    Multicast,
    Record,
    Send,
    SetTimer,
    StateChanged,
)
from ringcast.core.events import Event, Received
from ringcast.core.ids import NodeId
from ringcast.protocols.totem._messages import CommitToken, Join, MergeDetect, Token
from ringcast.protocols.totem._rrp_messages import RingTest, RrpPacket

MODES = ("none", "active", "passive", "active_passive")
TIMER_PREFIX = "rrp:"
T_TOKEN = TIMER_PREFIX + "token"
T_DECAY = TIMER_PREFIX + "decay"
T_PROBE = TIMER_PREFIX + "probe:"
T_SILENCE = TIMER_PREFIX + "silence"
T_CONFIRM = TIMER_PREFIX + "confirm:"
CONFIRM_DELAY = 1_000_000
"""Between the two looks of :meth:`RedundantRing._confirm` (1 ms)."""
HEALTHY, FAULTY = "healthy", "faulty"
WINDOW = 4096
"""Packets of one sender remembered for duplicate detection (a copy later than this
many newer packets of the same sender counts as a duplicate)."""
MAX_PENDING = 64
"""Tokens whose copies the active style waits for at once (older ones are judged)."""
MAX_BACKOFF = 3
"""Doublings of the probe interval and of the probes a round after relapses (8x)."""
TOKENS = (Token, CommitToken)

Up = list[Event]
Down = list[Effect]


class RrpSettings:
    """The redundant ring's settings, read from Totem's resolved settings."""

    __slots__ = (
        "autorecovery",
        "copies",
        "flap_window",
        "mcast_threshold",
        "mode",
        "problem_timeout",
        "readmit_probes",
        "silence",
        "threshold",
        "token_expired",
        "token_window",
    )

    def __init__(self, settings: dict[str, Any], networks: int):
        mode = settings["rrp_mode"]
        if mode not in MODES:
            raise ValueError(f"settings.rrp_mode: {mode!r} is not one of {', '.join(MODES)}")
        self.mode: str = mode
        self.copies: int = settings["rrp_copies"]
        if mode == "active_passive" and not 1 < self.copies < networks:
            raise ValueError(
                f"settings.rrp_copies: active_passive needs 1 < rrp_copies < networks, "
                f"got rrp_copies = {self.copies} with {networks} networks"
            )
        # 0: the single ring's token retransmission timeout (corosync's default)
        self.token_expired: int = (
            settings["rrp_token_expired_timeout"] or settings["token_retransmit_timeout"]
        )
        self.problem_timeout: int = settings["rrp_problem_count_timeout"]
        self.threshold: int = settings["rrp_problem_count_threshold"]
        self.mcast_threshold: int = settings["rrp_problem_count_mcast_threshold"]
        self.autorecovery: int = settings["rrp_autorecovery_check_timeout"]
        self.flap_window: int = settings["rrp_flap_window"]
        self.readmit_probes: int = settings["rrp_readmit_probes"]
        self.silence: int = settings["rrp_silence_timeout"]
        # Passive styles: tokens in a row with none on a network, to be faulty. The
        # predecessor's round robin puts a token on every healthy network within
        # N - K + 1 tokens (K = 1 in passive), so one turn is the longest healthy gap.
        k = 1 if mode == "passive" else self.copies
        turn = max(networks - k + 1, 1)
        self.token_window: int = settings["rrp_token_turns"] * turn


class _Dedup:
    """The packets of one sender incarnation seen so far: the highest number and a
    bit mask of the :data:`WINDOW` numbers below it."""

    __slots__ = ("high", "mask")

    def __init__(self) -> None:
        self.high = 0
        self.mask = 0

    def first(self, pkt: int) -> bool:
        """True the first time ``pkt`` is seen."""
        high = self.high
        if pkt > high:
            shift = pkt - high
            self.mask = ((self.mask << shift) | 1) & ((1 << WINDOW) - 1) if shift < WINDOW else 1
            self.high = pkt
            return True
        back = high - pkt
        if back >= WINDOW:
            return False
        bit = 1 << back
        if self.mask & bit:
            return False
        self.mask |= bit
        return True


class RedundantRing:
    """The redundant-ring layer of one node (see the module docstring)."""

    timer_prefix: ClassVar[str] = TIMER_PREFIX
    down_types: ClassVar[frozenset[type]] = frozenset({Send, Multicast, StateChanged})
    up_types: ClassVar[frozenset[type]] = frozenset({Received})

    def __init__(
        self,
        node_id: NodeId,
        networks: int,
        settings: RrpSettings,
        *,
        epoch: int,
        peers: tuple[NodeId, ...] = (),
    ):
        if networks < 1:
            raise ValueError("a redundant ring needs at least one network")
        self.node_id = node_id
        self.n = networks
        self.cfg = settings
        self.epoch = epoch & 0x7FFF_FFFF_FFFF_FFFF
        self.max_hops = max(len(peers), 2) + 1
        self.faulty = [False] * networks
        self.problems = [0] * networks
        """Active style: missed token copies per network (decaying)."""
        self.token_count = [0] * networks
        self.mcast_count = [0] * networks
        """Passive styles: tokens and frames received per network since the last reset."""
        self.successor: NodeId | None = None
        self._last_token: tuple[NodeId, Any] | None = None
        """Where the single ring last sent its token: the next node of the ring."""
        self.counters = {
            "duplicates": 0,
            "unknown_network": 0,
            "malformed": 0,
            "faulty_marks": 0,
            "readmissions": 0,
        }
        self._pkt = 0
        self._rr_token = 0
        self._rr_msg = 0
        self._seen: dict[NodeId, list[tuple[int, _Dedup]]] = {}
        self._pending: deque[tuple[int, tuple[NodeId, int, int], set[int]]] = deque()
        self._token_timer = False
        self._decay_armed = False
        self._nonce = 0
        self._outstanding: list[set[int]] = [set() for _ in range(networks)]
        """The nonces of the current probe round not back yet, per faulty network."""
        self._backoff = [0] * networks
        """Relapses in a row (each within ``rrp_flap_window`` of a re-admission)."""
        self._readmitted_at: list[int | None] = [None] * networks
        self._upper_state: dict[str, Any] = {}
        self._arrivals = 0
        self._heard_at = [0] * networks
        self._base = [0] * networks
        self._tokens = 0
        """Token packets received (first copies): the passive styles' clock."""
        self._token_at = [0] * networks
        """``_tokens`` when a copy of a token last arrived on each network."""
        self._suspect: list[tuple[int, int] | None] = [None] * networks
        """Passive styles: (``_base`` then, looks left) of a network without a token."""

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        """``rrp_net<k>`` per network and the mode, for the protocol state."""
        st: dict[str, Any] = {"rrp_mode": self.cfg.mode}
        for k in range(self.n):
            st[f"rrp_net{k}"] = FAULTY if self.faulty[k] else HEALTHY
        return st

    def _state(self) -> StateChanged:
        return StateChanged({**self._upper_state, **self.status()})

    # ------------------------------------------------------------------ Layer

    def start(self, now: int) -> Down:
        self._heard_at = [now] * self.n
        if self.n > 1 and self.cfg.silence > 0:
            return [SetTimer(T_SILENCE, self.cfg.silence // 2)]
        return []  # the status rides on the single ring's first StateChanged

    def timer(self, name: str, now: int) -> tuple[Up, Down]:
        out: Down = []
        if name == T_TOKEN:
            self._token_timer = False
            self._judge_tokens(now, out, expire_all=False)
        elif name == T_DECAY:
            self._decay(out)
        elif name == T_SILENCE:
            self._silence(now, out)
        elif name.startswith(T_CONFIRM):
            k = _net_of(name, T_CONFIRM)
            if 0 <= k < self.n:
                self._confirm(k, now, out)
        elif name.startswith(T_PROBE):
            k = _net_of(name, T_PROBE)
            if 0 <= k < self.n:
                self._probe(k, out)
        return [], out

    def down(self, effect: Effect, now: int) -> tuple[Up, Down]:
        tp = type(effect)
        if tp is StateChanged:
            self._upper_state = dict(effect.fields)  # type: ignore[union-attr]
            return [], [self._state()]
        if effect.network is not None:  # type: ignore[union-attr]
            return [], [effect]  # a layer above already chose
        msg = effect.msg  # type: ignore[union-attr]
        mt = type(msg)
        token = mt in TOKENS
        every = mt is Join or mt is MergeDetect
        if tp is Send and token:
            dst = effect.dst  # type: ignore[union-attr]
            last = self._last_token
            # The single ring sends a token again when its successor showed no sign
            # of it: the network it went on may have died unnoticed, so try them all.
            every = last is not None and last[0] == dst and (last[1] is msg or last[1] == msg)
            self._last_token = (dst, msg)
            self.successor = dst
        self._pkt += 1
        pkt = RrpPacket(self.epoch, self._pkt, msg)
        nets = list(range(self.n)) if every else self._networks_for(token)
        if tp is Send:
            dst = effect.dst  # type: ignore[union-attr]
            return [], [Send(dst, pkt, k) for k in nets]
        return [], [Multicast(pkt, k) for k in nets]

    def up(self, event: Event, now: int) -> tuple[Up, Down]:
        if type(event) is not Received:
            return [event], []
        net = event.network  # type: ignore[union-attr]
        src = event.src  # type: ignore[union-attr]
        msg = event.msg  # type: ignore[union-attr]
        out: Down = []
        if not isinstance(net, int) or not 0 <= net < self.n:
            self.counters["unknown_network"] += 1
            out.append(
                Record.of(
                    "drop",
                    reason="packet on an unknown network",
                    network=repr(net)[:40],
                    networks=self.n,
                    src=str(src)[:64],
                    count=self.counters["unknown_network"],
                )
            )
            return [], out
        tp = type(msg)
        if tp is RingTest:
            self._ring_test(msg, net, now, out)
            return [], out
        if tp is not RrpPacket:
            # A peer that sends without the envelope (rrp_mode "none"): nothing to
            # de-duplicate or count; the single ring copes with what it gets.
            return [event], []
        epoch, pkt = msg.epoch, msg.pkt
        if not isinstance(epoch, int) or not isinstance(pkt, int) or pkt < 1:
            self.counters["malformed"] += 1
            out.append(Record.of("drop", reason="malformed rrp packet", src=str(src)[:64]))
            return [], out
        inner = msg.msg
        token = type(inner) in TOKENS
        first = self._dedup(src, epoch).first(pkt)
        self._arrivals += 1
        self._heard_at[net] = now
        self._base[net] = self._arrivals
        if self.cfg.mode == "active":
            if token:
                self._token_copy((src, epoch, pkt), first, net, now, out)
        else:
            if token:
                self._token_turns(first, net, now, out)
            self._count(token, net, now, out)
        if not first:
            self.counters["duplicates"] += 1
            return [], out
        return [Received(src, inner, net)], out

    # ------------------------------------------------------------------ sending

    def _networks_for(self, token: bool) -> list[int]:
        mode = self.cfg.mode
        healthy = [k for k in range(self.n) if not self.faulty[k]]
        if mode == "active" or not healthy:
            return healthy or list(range(self.n))  # every network faulty: try them all
        want = 1 if mode == "passive" else min(self.cfg.copies, len(healthy))
        if token:
            start = self._rr_token
            self._rr_token += 1
        else:
            start = self._rr_msg
            self._rr_msg += 1
        m = len(healthy)
        return [healthy[(start + i) % m] for i in range(want)]

    # ------------------------------------------------------------------ duplicates

    def _dedup(self, src: NodeId, epoch: int) -> _Dedup:
        epochs = self._seen.get(src)
        if epochs is None:
            epochs = self._seen[src] = []
        for e, d in epochs:
            if e == epoch:
                return d
        d = _Dedup()
        epochs.insert(0, (epoch, d))
        del epochs[2:]  # the current incarnation and the one before it
        return d

    # ------------------------------------------------------------------ active detection

    def _token_copy(
        self, key: tuple[NodeId, int, int], first: bool, net: int, now: int, out: Down
    ) -> None:
        """A copy of a token packet arrived on ``net``: the first opens the wait for
        its copies on the other healthy networks, a later one closes it there."""
        if not first:
            for entry in self._pending:
                if entry[1] == key:
                    entry[2].add(net)
                    if all(self.faulty[k] or k in entry[2] for k in range(self.n)):
                        self._pending.remove(entry)
                    return
            return
        if all(self.faulty[k] or k == net for k in range(self.n)):
            return  # no other network to expect a copy on
        self._pending.append((now + self.cfg.token_expired, key, {net}))
        if len(self._pending) > MAX_PENDING:
            self._judge(self._pending.popleft(), now, out)
        if not self._token_timer:
            self._token_timer = True
            out.append(SetTimer(T_TOKEN, self.cfg.token_expired))

    def _judge_tokens(self, now: int, out: Down, *, expire_all: bool) -> None:
        pending = self._pending
        while pending and (expire_all or pending[0][0] <= now):
            self._judge(pending.popleft(), now, out)
        if pending and not self._token_timer:
            self._token_timer = True
            out.append(SetTimer(T_TOKEN, max(1, pending[0][0] - now)))

    def _judge(
        self, entry: tuple[int, tuple[NodeId, int, int], set[int]], now: int, out: Down
    ) -> None:
        got = entry[2]
        for k in range(self.n):
            if self.faulty[k] or k in got:
                continue
            self.problems[k] += 1
            if not self._decay_armed:
                self._decay_armed = True
                out.append(SetTimer(T_DECAY, self.cfg.problem_timeout))
            if self.problems[k] >= self.cfg.threshold:
                self._mark_faulty(
                    k, now, out, reason="token copies missing", problems=self.problems[k]
                )

    def _decay(self, out: Down) -> None:
        self._decay_armed = False
        found = False
        for k in range(self.n):
            if self.problems[k] > 0:
                self.problems[k] -= 1
                found = True
        if found:
            self._decay_armed = True
            out.append(SetTimer(T_DECAY, self.cfg.problem_timeout))

    def _silence(self, now: int, out: Down) -> None:
        """A network that carried nothing for ``rrp_silence_timeout`` while the others
        carried ``rrp_problem_count_mcast_threshold`` packets is faulty, whatever the
        style. (A busy host reads its sockets one after the other: a few dozen packets
        read from one network while the other waits are no sign of a fault; the
        runtime showed it with ten.)
        (ringcast's addition: a dead link is found at a fixed time, not after a number
        of tokens that a slow ring takes long to pass)."""
        out.append(SetTimer(T_SILENCE, self.cfg.silence // 2))
        for k in range(self.n):
            if (
                not self.faulty[k]
                and now - self._heard_at[k] >= self.cfg.silence
                and self._arrivals - self._base[k] >= self.cfg.mcast_threshold
            ):
                self._mark_faulty(
                    k,
                    now,
                    out,
                    reason="silent",
                    silent_ms=(now - self._heard_at[k]) // 1_000_000,
                    elsewhere=self._arrivals - self._base[k],
                )

    # ------------------------------------------------------------------ passive detection

    def _count(self, token: bool, net: int, now: int, out: Down) -> None:
        counts = self.token_count if token else self.mcast_count
        counts[net] += 1
        threshold = self.cfg.threshold if token else self.cfg.mcast_threshold
        best = max(counts)
        for k in range(self.n):
            if not self.faulty[k] and best - counts[k] > threshold:
                self._mark_faulty(
                    k,
                    now,
                    out,
                    reason="tokens behind" if token else "frames behind",
                    behind=best - counts[k],
                )
        low = min(counts)
        if low > 1 << 30:  # keep the counters small; only differences matter
            for k in range(self.n):
                counts[k] -= low

    def _token_turns(self, first: bool, net: int, now: int, out: Down) -> None:
        """A token copy arrived on ``net``: a healthy network that carried none of the
        last ``token_window`` tokens (this one included) and nothing at all for
        ``rrp_silence_timeout`` is suspected (ringcast's addition; see the module
        docstring). Copies of one packet count for every network they arrive on."""
        if first:
            self._tokens += 1
        self._token_at[net] = self._tokens
        window = self.cfg.token_window
        if not first or window <= 0:
            return
        for k in range(self.n):
            if (
                k != net
                and not self.faulty[k]
                and self._suspect[k] is None
                and self._tokens - self._token_at[k] >= window
                and now - self._heard_at[k] >= self.cfg.silence
            ):
                self._suspect[k] = (self._base[k], 2)
                out.append(SetTimer(T_CONFIRM + str(k), CONFIRM_DELAY))

    def _confirm(self, k: int, now: int, out: Down) -> None:
        """Mark a suspected network faulty if still nothing arrived on it at the second
        of two timer events. A host reads its sockets one after the other: the packet
        that clears the network may sit unread in its socket while a long batch from
        another socket is handled, and a timer due in that same turn of the event loop
        would come before it. The second timer is armed after the first fired, so the
        host reads every socket in between."""
        suspect = self._suspect[k]
        if suspect is None or self.faulty[k] or self._base[k] != suspect[0]:
            self._suspect[k] = None  # something arrived on it (or it is out already)
            return
        if suspect[1] > 1:
            self._suspect[k] = (suspect[0], suspect[1] - 1)
            out.append(SetTimer(T_CONFIRM + str(k), CONFIRM_DELAY))
            return
        self._suspect[k] = None
        self._mark_faulty(
            k,
            now,
            out,
            reason="no token in its turns",
            tokens=self._tokens - self._token_at[k],
            silent_ms=(now - self._heard_at[k]) // 1_000_000,
        )

    # ------------------------------------------------------------------ faulty / healthy

    def _mark_faulty(self, k: int, now: int, out: Down, *, reason: str, **why: Any) -> None:
        self.faulty[k] = True
        self.problems[k] = 0
        self.counters["faulty_marks"] += 1
        back = self._readmitted_at[k]
        if back is not None and now - back < self.cfg.flap_window:
            self._backoff[k] = min(self._backoff[k] + 1, MAX_BACKOFF)  # a relapse
        else:
            self._backoff[k] = 0
        self._outstanding[k] = set()
        out.append(
            Record.of(
                "fault",
                action="network_faulty",
                network=k,
                reason=reason,
                probes_needed=self._probes_needed(k),
                probe_every_ms=self._probe_every(k) // 1_000_000,
                **why,
            )
        )
        out.append(self._state())
        out.append(SetTimer(T_PROBE + str(k), self._probe_every(k)))

    def _probes_needed(self, k: int) -> int:
        return max(self.cfg.readmit_probes, 1) << self._backoff[k]

    def _probe_every(self, k: int) -> int:
        return self.cfg.autorecovery << self._backoff[k]

    def _readmit(self, k: int, now: int, out: Down, by: NodeId) -> None:
        if not self.faulty[k]:
            return
        self.faulty[k] = False
        self.problems[k] = 0
        self._heard_at[k] = now
        self._base[k] = self._arrivals
        self._token_at[k] = self._tokens
        self._suspect[k] = None
        for counts in (self.token_count, self.mcast_count):
            for j in range(self.n):
                counts[j] = 0
        for entry in self._pending:
            entry[2].add(k)  # tokens sent while it was out: no copy expected there
        self.counters["readmissions"] += 1
        self._readmitted_at[k] = now
        self._outstanding[k] = set()
        out.append(CancelTimer(T_PROBE + str(k)))
        out.append(Record.of("fault", action="network_healthy", network=k, by=by))
        out.append(self._state())

    # ------------------------------------------------------------------ probes

    def _probe(self, k: int, out: Down) -> None:
        """A new probe round on faulty network ``k``; the last one, if some of its probes
        are still out, failed (a probe is back within milliseconds on a good ring)."""
        if not self.faulty[k]:
            return
        out.append(SetTimer(T_PROBE + str(k), self._probe_every(k)))
        nxt = self.successor
        if nxt is None or nxt == self.node_id:
            self._outstanding[k] = set()
            return
        first = self._nonce + 1
        self._nonce += self._probes_needed(k)
        self._outstanding[k] = set(range(first, self._nonce + 1))
        for nonce in range(first, self._nonce + 1):
            out.append(Send(nxt, RingTest(self.node_id, k, nonce, False, 0), k))

    def _ring_test(self, msg: RingTest, net: int, now: int, out: Down) -> None:
        origin, network, nonce, hops = msg.origin, msg.network, msg.nonce, msg.hops
        if (
            not isinstance(origin, str)
            or network != net
            or not isinstance(nonce, int)
            or not isinstance(hops, int)
        ):
            self.counters["malformed"] += 1
            out.append(Record.of("drop", reason="malformed ring test", network=net))
            return
        me = self.node_id
        if origin == me:
            round_ = self._outstanding[net]
            if msg.activate or nonce not in round_:
                return  # the activate round is back, or a probe of an earlier round
            round_.discard(nonce)
            if not round_:  # every probe of the round went round the ring
                self._readmit(net, now, out, me)
                self._forward(RingTest(me, net, nonce, True, 0), net, out)
            return
        if msg.activate:
            self._readmit(net, now, out, origin)
        if hops >= self.max_hops:
            return  # its origin is no longer on the ring
        self._forward(RingTest(origin, net, nonce, msg.activate, hops + 1), net, out)

    def _forward(self, msg: RingTest, net: int, out: Down) -> None:
        nxt = self.successor
        if nxt is not None and nxt != self.node_id:
            out.append(Send(nxt, msg, net))


def _net_of(name: str, prefix: str) -> int:
    """The network number a per-network timer's name ends with (-1 if none)."""
    try:
        return int(name[len(prefix) :])
    except ValueError:
        return -1
