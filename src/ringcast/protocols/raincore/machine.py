"""The Raincore Group Communication Manager of one node (the Raincore paper, section 1.1).

:class:`RaincoreMachine` keeps the local data structures of Figure 8 under the paper's
names (in snake case) and runs the pseudo code of the eight events, dispatching on the
transition table of :mod:`._state`. The token and the 911 message travel as
``Send(..., reliable=True)`` through the reliable-unicast layer (the Transport Manager),
whose ``SendFailed`` is the "failure-on-delivery notification". Every place where the
paper is silent and a choice was made is marked "Decision" and listed in
docs/protocols/raincore.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ringcast.core.codec import DecodeError, EncodeError, decode, encode
from ringcast.core.effects import (
    CancelTimer,
    Effect,
    Persist,
    Record,
    Send,
    SetTimer,
    StateChanged,
    install_view,
    leader_of_view,
)
from ringcast.core.events import (
    LockRelease,
    LockRequest,
    Received,
    SendFailed,
    Start,
    Stop,
    Submit,
    TimerFired,
)
from ringcast.core.fsm import Driver
from ringcast.core.ids import NodeId, View
from ringcast.core.machine import MachineContext
from ringcast.protocols.raincore._messages import (
    NINE11_SIGNATURE,
    TOKEN_SIGNATURE,
    GlobalViewEntry,
    Limits,
    Msg911,
    Snapshot,
    Status,
    Token,
)
from ringcast.protocols.raincore._ring import (
    has_quorum,
    insert_after,
    next_after,
    route_from,
    without,
)
from ringcast.protocols.raincore._state import (
    ON_TOKEN,
    TABLE,
    Action,
    Ev,
    Sight,
    State,
    TokenState,
    ViewState,
    ViewStep,
)
from ringcast.protocols.raincore.services import TokenLock, TokenMulticast, fence

STATE_KEY = "raincore.state"
EATING_TIMER = "rc:eating"
HUNGRY_TIMER = "rc:hungry"
STARVING_TIMER = "rc:starving"
_TIMER_EVENTS = {
    EATING_TIMER: Ev.EATING_TIMEOUT,
    HUNGRY_TIMER: Ev.HUNGRY_TIMEOUT,
    STARVING_TIMER: Ev.STARVING_TIMEOUT,
}

REGENERATION_GAP = 1 << 20
"""Decision: a regenerated token's sequence number jumps this far ahead of the copy it
is made from, so any stale copy of the lost token loses every comparison with it."""


@dataclass(frozen=True, slots=True)
class RaincoreSettings:
    """The settings resolved from the registration's (``SETTINGS``, where each default
    is declared) into the types the machine uses."""

    eating_timeout: int
    hungry_timeout: int
    starving_timeout: int
    initial_token_seq: int
    lock_max_hold: int
    max_token_messages: int
    primary_component: bool
    max_token_bytes: int
    max_pending: int
    busy_eating_timeout: int
    token_confirmations: int

    @classmethod
    def from_mapping(cls, s: dict[str, Any]) -> RaincoreSettings:
        return cls(
            eating_timeout=int(s["eating_timeout"]),
            hungry_timeout=int(s["hungry_timeout"]),
            starving_timeout=int(s["starving_timeout"]),
            initial_token_seq=int(s["initial_token_seq"]),
            lock_max_hold=int(s["lock_max_hold"]),
            max_token_messages=int(s["max_token_messages"]),
            primary_component=bool(s["primary_component"]),
            max_token_bytes=int(s["max_token_bytes"]),
            max_pending=int(s["max_pending"]),
            busy_eating_timeout=int(s["busy_eating_timeout"]),
            token_confirmations=int(s["token_confirmations"]),
        )


class RaincoreMachine:
    """One node's token-ring state machine (sans-IO): ``handle(event, now) -> effects``."""

    def __init__(self, ctx: MachineContext, settings: RaincoreSettings):
        self.node_id: NodeId = ctx.node_id
        self.settings = settings
        self.fsm = Driver(
            TABLE,
            self,
            {
                Action.INITIALIZE: self._initialize,
                Action.ACCEPT_TOKEN: self._accept_token,
                Action.DROP_TOKEN: self._drop_token,
                Action.HANDLE_911: self._handle_911,
                Action.REROUTE_TOKEN: self._reroute_token,
                Action.DISCARD_RETURNED_TOKEN: self._discard_returned_token,
                Action.REROUTE_911: self._reroute_911,
                Action.PASS_TOKEN: self._pass_token,
                Action.STARVE: self._starve,
                Action.CALL_911_AGAIN: self._call_911_again,
            },
            status=self.status,
        )
        self.contacts = tuple(n for n in (ctx.members or ctx.peers) if n != ctx.node_id)
        self._contact = 0
        # Figure 8: the local data structures.
        self.global_view: dict[int, tuple[NodeId, ...] | None] = {}
        self.global_view_number = 0
        self.last_token: Token | None = None
        self.local_view: tuple[NodeId, ...] = ()
        self.new_nodes: list[NodeId] = []
        # Not in Figure 8: the location reserved in Reserve state, and the highest
        # location this node ever reserved (it never reserves one twice: decision 22).
        self.reserved_index: int | None = None
        self.highest_reserved = 0
        # Decision 1: the primary component is a majority of every node the group may
        # hold (the broadcast domain), ties to the half holding its first node.
        self.universe: tuple[NodeId, ...] = tuple(sorted({*ctx.peers, *ctx.members, ctx.node_id}))
        self.token: Token | None = None  # the token in hand while Eating
        self.eating_since = 0  # when it was taken into hand
        # Decision (the 911 vote): until this time a starving node that let through the
        # 911 of a node with a newer token does not regenerate on its own 911.
        self.yielded_until: int | None = None
        # Decision 37: the token hop being confirmed (sequence number, next node) and how
        # many times it was sent again to that node after a failure-on-delivery.
        self.confirming: tuple[int, NodeId, int] | None = None
        self.stopped = False
        self.token_state = TokenState.STARVING
        self.view_state = ViewState.CHAOS
        self.creates_token = False
        self.bootstrap = False
        incarnation = 1
        delivered: tuple = ()
        snap = _load(ctx.storage.get(STATE_KEY))
        if snap is not None:
            # A recovered node "keeps all its existing local state" (Figure 14).
            incarnation = snap.incarnation + 1
            self.global_view = {e.index: (None if e.null else e.members) for e in snap.global_view}
            self._prune_global_view()
            self.global_view_number = snap.global_view_number
            self.last_token = snap.last_token
            self.local_view = snap.local_view
            self.highest_reserved = snap.highest_reserved
            delivered = snap.delivered
        elif ctx.node_id in ctx.members and not ctx.joining:
            # Bootstrap: the members form an established ring, globalView = [members].
            self.global_view = {1: tuple(ctx.members)}
            self.global_view_number = 1
            self.local_view = tuple(ctx.members)
            self.view_state = ViewState.AGREEMENT
            self.bootstrap = True
            self.creates_token = ctx.members[0] == ctx.node_id
            # The first member boots Eating (it creates the token), the others Hungry.
            self.token_state = TokenState.EATING if self.creates_token else TokenState.HUNGRY
        self.incarnation = incarnation
        self.multicast = TokenMulticast(
            self.node_id,
            incarnation,
            max_token_messages=settings.max_token_messages,
            max_token_bytes=settings.max_token_bytes,
            max_pending=settings.max_pending,
            delivered=delivered,
        )
        self.lock = TokenLock(settings.lock_max_hold)
        self.limits = Limits(
            max_messages=settings.max_token_messages, max_bytes=settings.max_token_bytes
        )

    # ------------------------------------------------------------------ Figure 8

    @property
    def state(self) -> State:
        return (self.token_state, self.view_state)

    @property
    def last_token_seq(self) -> int:
        return self.last_token.sequence_number if self.last_token is not None else 0

    @property
    def last_global_view(self) -> tuple[NodeId, ...]:
        for index in sorted(self.global_view, reverse=True):
            members = self.global_view[index]
            if members is not None:
                return members
        return ()

    def committed_views(self) -> dict[int, tuple[NodeId, ...]]:
        """The non-NULL entries of the globalView vector."""
        return {i: m for i, m in sorted(self.global_view.items()) if m is not None}

    # ------------------------------------------------------------------ dispatch

    def handle(self, event: Any, now: int) -> list[Effect]:
        if self.stopped:
            return []
        tp = type(event)
        if tp is Received:
            # Decision 25: nothing from a packet is trusted; a bad message changes nothing.
            msg = event.msg
            if type(msg) is Token and msg.well_formed(self.limits):
                return self.fsm.step(Ev.TOKEN_RECEIVED, now, event.src, msg)
            if type(msg) is Msg911 and msg.well_formed(self.limits):
                return self.fsm.step(Ev.NINE11_RECEIVED, now, event.src, msg)
            return [_drop("malformed or unknown message", src=event.src, type=type(msg).__name__)]
        if tp is TimerFired:
            ev = _TIMER_EVENTS.get(event.name)
            if ev is None:
                return [_drop("unknown timer", timer=event.name)]
            return self.fsm.step(ev, now)
        if tp is SendFailed:
            msg = event.msg
            if type(msg) is Token and msg.well_formed(self.limits):
                return self.fsm.step(
                    Ev.TOKEN_DELIVERY_FAILURE, now, event.dst, msg, event.unanswered
                )
            if type(msg) is Msg911 and msg.well_formed(self.limits):
                return self.fsm.step(Ev.NINE11_DELIVERY_FAILURE, now, event.dst, msg)
            return [_drop("delivery failure of an unknown message", dst=event.dst)]
        if tp is Start:
            return self.fsm.step(Ev.INITIALIZATION, now)
        if tp is Submit:
            return self.multicast.submit(event)
        if tp is LockRequest:
            self.lock.request()
            return self._grant_lock(now)
        if tp is LockRelease:
            out = self.lock.release()
            if out and self.token_state is TokenState.EATING:
                # The lock was what kept the token here: pass it on now.
                out.append(CancelTimer(EATING_TIMER))
                out.extend(self.fsm.step(Ev.EATING_TIMEOUT, now))
            return out
        if tp is Stop:
            return self._leave(now)
        return []  # Suspected / Unsuspected: Raincore's failure detector is the transport

    # ------------------------------------------------------------------ 1. Initialization

    def _initialize(self, now: int) -> list[Effect]:
        out: list[Effect] = [self._persist()]
        if self.bootstrap:
            # The bootstrap ring's globalView entry 1 is this node's first commit.
            view = View("1", self.global_view[1] or ())
            out.extend([*install_view(view), *leader_of_view(view)])
        if self.token_state is TokenState.STARVING:
            # A new node, or a recovered one with its state: Starving, 911 (Figure 14).
            out.append(self._record_state("start"))
            out.extend(self._send_911())
            out.append(SetTimer(STARVING_TIMER, self.settings.starving_timeout))
            return out
        if self.creates_token:
            # "Initialize the token with a unique initial sequence number".
            token = Token(
                TOKEN_SIGNATURE,
                self.settings.initial_token_seq,
                self.local_view,
                0,
                0,
                self.global_view_number,
            )
            self.last_token = self.token = token
            self.token_state = TokenState.EATING
            self.eating_since = now
            out.append(Record.of("token", op="created", seq=token.sequence_number))
            out.append(self._record_state("init"))
            out.extend(self._grant_lock(now))
            out.append(SetTimer(EATING_TIMER, self.settings.eating_timeout))
        else:
            out.append(SetTimer(HUNGRY_TIMER, self.settings.hungry_timeout))
        return out

    # ------------------------------------------------------------------ 2. Token received

    def _drop_token(self, now: int, src: NodeId, token: Token) -> list[Effect]:
        """ "If (tokenState == EATING) { Drop the token; }" """
        return [_token_dropped(token, src, "eating")]

    def _accept_token(self, now: int, src: NodeId, token: Token) -> list[Effect]:
        if token.destination_node != self.node_id:
            return [_token_dropped(token, src, "not addressed to this node")]
        valid = token.sequence_number > self.last_token_seq or (
            # Decision: a starving node whose ring has committed views it has not seen
            # takes the token whatever its number (its lastTokenSeq is from an old ring).
            self.token_state is TokenState.STARVING
            and token.global_view_number > self.global_view_number
        )
        if not valid:
            return [_token_dropped(token, src, "sequence number mis-match")]
        out: list[Effect] = [CancelTimer(HUNGRY_TIMER), CancelTimer(STARVING_TIMER)]
        starving = self.token_state is TokenState.STARVING
        self.token_state = TokenState.EATING
        self.yielded_until = None
        token = token.with_(current=token.destination)  # "Update token.currentNode"
        new_view, step = ON_TOKEN[(self.view_state, self._sight(token, starving))]
        if step is ViewStep.RESERVE:
            token = self._reserve(token)
        elif step is ViewStep.COMMIT:
            out.extend(self._commit(token.nodelist))
            index = self.global_view_number
            if token.global_view_number < index:  # "Update token.globalViewNumber"
                token = token.with_(global_view_number=index)
        elif step is ViewStep.COMMIT_NULL:
            out.extend(self._commit_null())
        self.view_state = new_view
        if token.global_view_number > self.global_view_number:
            self.global_view_number = token.global_view_number
        self.local_view = token.nodelist
        self.last_token = self.token = token
        out.append(Record.of("token", op="received", seq=token.sequence_number, src=src))
        out.append(self._record_state("token"))
        out.extend(self._eat(now))
        return out

    def _sight(self, token: Token, starving: bool) -> Sight:
        """What the token shows this node for the view-state step (decisions 8, 22)."""
        # Decision: a token that ends starvation confirms nothing -- the localView it is
        # compared with dates from before the node lost the ring.
        if token.nodelist != self.local_view or starving:
            return Sight.CHANGED
        me = self.node_id
        view = self.view_state
        open_ = token.reservation > token.global_view_number and bool(token.reserved_by)
        if view is ViewState.AGREEMENT:
            # Others reserve a location this node has no part in: join them (Chaos, then
            # Reserve on the next pass), or their reservation can never be complete.
            return Sight.OTHERS_RESERVING if open_ and me not in token.reserved_by else Sight.SAME
        if view is ViewState.CHAOS:
            if self.settings.primary_component and not self._quorum(token.nodelist):
                return Sight.NO_PRIMARY
            return Sight.SAME
        if token.reservation != self.reserved_index or me not in token.reserved_by:
            return Sight.SUPERSEDED
        if not set(token.nodelist) <= set(token.reserved_by):
            return Sight.STILL_RESERVING
        return Sight.SAME

    def _reserve(self, token: Token) -> Token:
        """Reserve a location and sign the token (decision 22): join the reservation the
        token carries if this node never reserved that location, or else open a new one
        above every location the token or this node knows of."""
        me = self.node_id
        k = token.reservation
        if (
            k > max(token.global_view_number, self.highest_reserved)
            and token.reserved_by
            and me not in token.reserved_by  # a signature of mine I never made: forged
        ):
            signed = (*token.reserved_by, me)
        else:
            k = 1 + max(
                token.global_view_number,
                token.reservation,
                self.highest_reserved,
                self.global_view_number,
            )
            signed = (me,)
        # "increment globalViewNumber": the location this ring will commit.
        self.global_view_number = self.reserved_index = self.highest_reserved = k
        return token.with_(reservation=k, reserved_by=signed)

    def _eat(self, now: int, *, came_round: bool = True) -> list[Effect]:
        """The token is in hand: deliver what it carries, grant the lock, start eating."""
        assert self.token is not None
        self.eating_since = now
        agreed = self.view_state is ViewState.AGREEMENT
        out = self.multicast.on_token(self.token, came_round=came_round, deliver=agreed)
        if out:
            out.append(self._persist())  # the duplicate filter survives a crash
        out.extend(self._grant_lock(now))
        out.append(SetTimer(EATING_TIMER, self._eating_time(self.token)))
        return out

    def _grant_lock(self, now: int) -> list[Effect]:
        """Decision: the lock is granted only by a token eaten in Agreement. Two live
        copies of the token exist after a false failure-on-delivery (the token arrived,
        its acks did not, e.g. a partition cut in mid-transfer): the sender reroutes its
        copy in Chaos. A copy in Chaos grants nothing until its whole ring has confirmed
        its nodelist twice (Reserve, commit), which a copy on the wrong side of a
        partition never does, and by which time the other copy has died at the first
        node that saw the newer sequence number -- unless a lock holds it longer."""
        if self.token_state is not TokenState.EATING or self.view_state is not ViewState.AGREEMENT:
            return []
        if self.token is None or now > self.eating_since + self._hold_bound():
            # Decision 23: a node that held the token past any hold it may take was
            # stalled (a paused process): the ring has moved on, its copy grants nothing.
            return []
        index = max(self.committed_views(), default=0)
        return self.lock.on_eating(now, fence(index, self.token.sequence_number))

    def _hold_bound(self) -> int:
        """The longest a node keeps the token: an eating time and a lock hold."""
        return self.settings.eating_timeout + self.settings.lock_max_hold

    def _eating_time(self, token: Token) -> int:
        """Decision: the eating time paces an idle token; while traffic flows (the token
        carries messages or some wait here) the node holds it only busy_eating_timeout,
        so a rotation under load costs the hops, not the ring size x eating_timeout."""
        s = self.settings
        if self.multicast.busy(token):
            return min(s.eating_timeout, s.busy_eating_timeout)
        return s.eating_timeout

    def _commit(self, members: tuple[NodeId, ...]) -> list[Effect]:
        """ "commit to globalViewVector" at the reserved location."""
        index = self.reserved_index if self.reserved_index is not None else self.global_view_number
        self.global_view[index] = members
        self.global_view_number = max(self.global_view_number, index)
        self.reserved_index = None
        self._prune_global_view()
        view = View(str(index), members)
        return [*install_view(view), *leader_of_view(view), self._persist()]

    def _commit_null(self) -> list[Effect]:
        """ "commit NULL to the reserved location" (not a view: a trace record)."""
        index = self.reserved_index
        self.reserved_index = None
        if index is None:
            return []
        self.global_view[index] = None
        self._prune_global_view()
        return [Record.of("null_commit", view=str(index))]

    def _prune_global_view(self) -> None:
        """Decision 31: the vector keeps its tail. Only the latest committed entry is ever
        read (lastGlobalView, the lock's fence, the token's globalViewNumber), so the
        entries below it, and every NULL but the newest, are dropped: a node's state and
        its snapshot stay the same size however many views the group goes through."""
        committed = [i for i, m in self.global_view.items() if m is not None]
        latest = max(committed, default=0)
        nulls = [i for i, m in self.global_view.items() if m is None and i > latest]
        keep = {latest, max(nulls, default=0)}
        for i in [i for i in self.global_view if i not in keep]:
            del self.global_view[i]

    def _enter_chaos(self) -> list[Effect]:
        """Chaos from any view state; a location reserved in Reserve becomes NULL."""
        out = self._commit_null() if self.view_state is ViewState.RESERVE else []
        self.view_state = ViewState.CHAOS
        return out

    # ------------------------------------------------------------------ 3. 911 received

    def _handle_911(self, now: int, src: NodeId, m: Msg911) -> list[Effect]:
        me = self.node_id
        if me in m.nodelist:
            m = m.with_(current=m.nodelist.index(me))  # "Update 911.currentNode"
        else:
            m = m.with_(current=m.destination)
        orig = m.originating_node
        if orig == me:
            if m.status is Status.YES and self.token_state is TokenState.STARVING:
                return self._regenerate(now, m)
            if m.status is Status.REJECT:
                self._contact += 1  # Decision: ask the next contact next time
            return [Record.of("911", op="answer", status=m.status.name, seq=m.sequence_number)]
        if m.status is not Status.YES:
            return [_drop("911 answer for another node", orig=orig)]
        if not (self.last_global_view or self.local_view):
            # Decision 3: a node in no group answers a join request (the originator has
            # no token either) with REJECT; a regeneration 911 of a node of the universe
            # it lets through: it holds no token that could be newer.
            if m.sequence_number == 0 or orig not in self.universe:
                return self._answer_911(m, Status.REJECT)
            return self._let_911_through(now, m)
        member = orig in self.last_global_view
        out: list[Effect] = []
        if self.token_state is not TokenState.STARVING:
            # Decision 2: "If the token has not been lost" (this node has it or expects
            # it) -> NO; an originator missing from the ring is queued to (re)join.
            if orig not in self.local_view:
                out.extend(self._queue_new_node(orig))
            if member:
                out.extend(self._answer_911(m, Status.NO))
            return out
        if not member:
            # "Queue it up onto the newNode queue" (added once this node eats again) ...
            out.extend(self._queue_new_node(orig))
            if orig not in self.universe:
                return out
        # ... and, starving itself, judge it as a regeneration 911 whether or not the
        # originator is in this node's lastGlobalView (decision 4: the route covers the
        # universe, and the last views of two starving nodes may differ).
        veto = m.sequence_number < self.last_token_seq or (
            m.sequence_number == self.last_token_seq and me > orig
        )
        if veto:
            return out + self._answer_911(m, Status.NO)
        return out + self._let_911_through(now, m)

    def _let_911_through(self, now: int, m: Msg911) -> list[Effect]:
        """Pass the 911 on to the next node of its route. Decision 20: letting it through
        is a vote for its originator; this node's own 911 coming back YES must not
        regenerate a second token."""
        self.yielded_until = now + self.settings.hungry_timeout
        nxt = (m.current + 1) % len(m.nodelist)
        return self._send_911_msg(m.with_(destination=nxt))

    def _queue_new_node(self, node: NodeId) -> list[Effect]:
        if node not in self.new_nodes:
            self.new_nodes.append(node)
            return [Record.of("join_request", node=node)]
        return []

    def _answer_911(self, m: Msg911, status: Status) -> list[Effect]:
        return self._send_911_msg(m.with_(status=status, destination=m.originator))

    def _send_911_msg(self, m: Msg911) -> list[Effect]:
        return [Send(m.destination_node, m, reliable=True)]

    def _regenerate(self, now: int, m: Msg911) -> list[Effect]:
        """ "That node would receive its own 911 message with the status field YES. It will
        enter Eating state and create a new token making a copy of its lastToken." """
        base = self.last_token
        fresh = base is None
        if base is None:
            # Decision 28: no voter has a copy (this node never held the token, and a
            # voter holding a newer one would have vetoed), so the ring starts from a
            # fresh token, as at initialization, numbered above every voter's.
            base = Token(
                TOKEN_SIGNATURE,
                max(m.sequence_number, self.last_token_seq),
                (self.node_id,),
                0,
                0,
                self.global_view_number,
            )
        if self.yielded_until is not None and now < self.yielded_until:
            # Decision: this node voted for a 911 with a newer token since it sent its own.
            return [Record.of("911", op="answer", status="YES", note="yielded")]
        # Decision: the new ring is exactly the nodes that let the 911 through (they are
        # reachable and starving), in lastToken's order, then the others in route order.
        # lastToken's nodelist alone may have shrunk (reroutes before the node starved)
        # to a minority, and the quorum must hold for the ring that will commit.
        voters = set(m.nodelist) | {self.node_id}
        nodelist = tuple(n for n in base.nodelist if n in voters)
        nodelist += tuple(n for n in m.nodelist if n not in nodelist)
        if self.node_id not in nodelist:
            nodelist = (self.node_id, *nodelist)
        if self.settings.primary_component and not self._quorum(nodelist):
            return [Record.of("911", op="answer", status="YES", note="no primary component")]
        me = nodelist.index(self.node_id)
        token = base.with_(
            sequence_number=base.sequence_number + REGENERATION_GAP,
            nodelist=nodelist,
            # the signatures hold only for the nodelist they were made with
            reserved_by=base.reserved_by if nodelist == base.nodelist else (),
            current=me,
            destination=me,
            global_view_number=max(base.global_view_number, max(self.committed_views(), default=0)),
        )
        self.last_token = self.token = token
        self.token_state = TokenState.EATING
        self.yielded_until = None
        out: list[Effect] = [
            CancelTimer(STARVING_TIMER),
            Record.of("token", op="created" if fresh else "regenerated", seq=token.sequence_number),
            self._record_state("regenerated"),
        ]
        out.extend(self._eat(now, came_round=False))
        return out

    def _quorum(self, nodes: tuple[NodeId, ...]) -> bool:
        """Decision 1 (primary component): a ring may reserve a location, regenerate the
        token or keep it after dropping nodes only if it holds a strict majority of the
        universe (every node of the broadcast domain), or exactly half of it including
        the universe's first node. Any two such rings share a node."""
        return has_quorum(nodes, self.universe)

    # ------------------------------------------------------------------ 4. Token delivery failure

    def _discard_returned_token(
        self, now: int, dst: NodeId, token: Token, unanswered: bool = True
    ) -> list[Effect]:
        # Decision: a token coming back while the node is not Hungry is not the live
        # token (Eating: an older copy; Starving: a 911 may be regenerating it).
        return [_token_dropped(token, dst, f"returned while {self.token_state.value}")]

    def _reroute_token(
        self, now: int, dst: NodeId, token: Token, unanswered: bool = True
    ) -> list[Effect]:
        me = self.node_id
        if token.sequence_number != self.last_token_seq or me not in token.nodelist:
            return [_token_dropped(token, dst, "returned copy is stale")]
        if self.settings.token_confirmations and unanswered:
            # Decision 37: a next node that answered none of the transmissions may be
            # alive but kept off the CPU: send it the same token again (the transport's
            # whole budget again) before cutting it from the ring. A node that answered
            # as a later incarnation (decision 34) restarted: it is cut at once.
            seq = token.sequence_number
            c = self.confirming
            sent = c[2] if c is not None and c[0] == seq and c[1] == dst else 0
            if sent < self.settings.token_confirmations:
                self.confirming = (seq, dst, sent + 1)
                return [
                    Record.of("token", op="confirm", seq=seq, dst=dst, attempt=sent + 1),
                    Send(dst, token, reliable=True),
                    SetTimer(HUNGRY_TIMER, self.settings.hungry_timeout),
                ]
            self.confirming = None
        out: list[Effect] = [CancelTimer(HUNGRY_TIMER)]
        out.extend(self._enter_chaos())  # "ringState=CHAOS"
        self.token_state = TokenState.EATING
        nodelist = without(token.nodelist, dst)  # "Update token with new nodelist"
        token = token.with_(nodelist=nodelist, current=nodelist.index(me), reserved_by=())
        self.local_view = nodelist
        self.last_token = token
        out.append(Record.of("token", op="returned", seq=token.sequence_number, dst=dst))
        out.append(self._record_state("returned"))
        if self.settings.primary_component and not self._quorum(nodelist):
            # Decision: a ring without a primary component gives the token up.
            out.append(_token_dropped(token, dst, "no primary component"))
            return out + self._starve(now)
        token = token.with_(sequence_number=token.sequence_number + 1)
        if nodelist == (me,):
            # "nodelist contains only one node, self": reserve and commit at once (the
            # ring's only member has signed its reservation).
            self.view_state = ViewState.RESERVE
            token = self._reserve(token)
            token = token.with_(global_view_number=self.global_view_number, destination=0)
            out.extend(self._commit(nodelist))
            self.view_state = ViewState.AGREEMENT
            self.last_token = self.token = token
            out.extend(self._eat(now, came_round=False))
            return out
        return out + self._send_token(token)

    def _send_token(self, token: Token) -> list[Effect]:
        """Point the token at the next node, copy it to lastToken, send it, go Hungry."""
        dest = next_after(token.nodelist, self.node_id)
        token = token.with_(destination=token.nodelist.index(dest))
        self.last_token = token
        self.token = None
        self.token_state = TokenState.HUNGRY
        return [
            self._persist(),
            Send(dest, token, reliable=True),
            Record.of("token", op="sent", seq=token.sequence_number, dst=dest),
            SetTimer(HUNGRY_TIMER, self.settings.hungry_timeout),
        ]

    # ------------------------------------------------------------------ 5. 911 delivery failure

    def _reroute_911(self, now: int, dst: NodeId, m: Msg911) -> list[Effect]:
        """ "Update 911 destination pointer; Send 911" -- past the node it missed."""
        if m.status is not Status.YES or dst not in m.nodelist:
            return [_drop("911 answer undeliverable", dst=dst)]
        orig = m.originating_node
        if dst == orig:
            return [_drop("911 originator unreachable", dst=dst)]
        nodelist = without(m.nodelist, dst)
        me = self.node_id
        cur = nodelist.index(me) if me in nodelist else 0
        m = m.with_(
            nodelist=nodelist,
            current=cur,
            originator=nodelist.index(orig),
            destination=(cur + 1) % len(nodelist),
        )
        if m.destination_node == me:
            # Nobody else is left on the route: the 911 comes straight back.
            return self.fsm.step(Ev.NINE11_RECEIVED, now, me, m)
        return [Record.of("911", op="rerouted", dst=m.destination_node), *self._send_911_msg(m)]

    # ------------------------------------------------------------------ 6. Eating timeout

    def _pass_token(self, now: int) -> list[Effect]:
        token = self.token
        if token is None:
            return [_drop("eating without a token")]
        out: list[Effect] = []
        remaining = self.lock.remaining(now)
        if remaining > 0:
            # The lock holder keeps the token, up to lock_max_hold.
            return [SetTimer(EATING_TIMER, min(self.settings.eating_timeout, remaining))]
        if self.lock.held:  # (a request still waiting for Agreement stays queued)
            out.extend(self.lock.release("max_hold"))
        me = self.node_id
        new = [n for n in self.new_nodes if n not in token.nodelist]
        if new:
            # "Add newNodes to the token nodelist; viewState=CHAOS"
            nodelist = insert_after(token.nodelist, me, new)
            token = token.with_(nodelist=nodelist, current=nodelist.index(me), reserved_by=())
            out.extend(self._enter_chaos())
            out.append(Record.of("join", nodes=new))
        self.new_nodes.clear()  # "Clear newNodes queue"
        agreed = self.view_state is ViewState.AGREEMENT
        token, carried = self.multicast.on_pass(token, deliver=agreed)
        out.extend(carried)
        if len(token.nodelist) > 1:
            token = token.with_(sequence_number=token.sequence_number + 1)
            return out + self._send_token(token)
        self.token = self.last_token = token
        self.eating_since = now  # a ring of one eats on
        out.append(SetTimer(EATING_TIMER, self.settings.eating_timeout))  # "Restart EATING"
        return out

    # ------------------------------------------------------------------ 7, 8. Hungry, Starving

    def _starve(self, now: int) -> list[Effect]:
        """ "tokenState=STARVING; Start STARVING timeout; viewState=CHAOS;
        Initiate 911 with lastTokenSeq; 911.status = YES" """
        out: list[Effect] = [CancelTimer(HUNGRY_TIMER), CancelTimer(EATING_TIMER)]
        self.token_state = TokenState.STARVING
        self.token = None
        out.extend(self._enter_chaos())
        out.append(self._record_state("starving"))
        out.append(SetTimer(STARVING_TIMER, self.settings.starving_timeout))
        out.extend(self._send_911())
        return out

    def _call_911_again(self, now: int) -> list[Effect]:
        out: list[Effect] = [SetTimer(STARVING_TIMER, self.settings.starving_timeout)]
        out.extend(self._send_911())
        return out

    def _send_911(self) -> list[Effect]:
        """A fresh 911, status YES, to "the next node on lastGlobalView" (a node in no
        group yet sends it to one of its contacts: "to any node in the group")."""
        me = self.node_id
        view = self.last_global_view
        if view:
            # Decision 4: the lastGlobalView from this node, then the rest of the
            # universe: the primary component is counted over the universe, so the
            # voters of a regeneration must be sought there too.
            route = route_from(view, me)
            route += tuple(n for n in route_from(self.universe, me) if n not in route)
        else:
            if not self.contacts:
                return []
            k = self._contact % len(self.contacts)
            route = (me, *self.contacts[k:], *self.contacts[:k])
        if len(route) == 1:
            return []
        m = Msg911(NINE11_SIGNATURE, route, 0, 1, 0, self.last_token_seq, Status.YES)
        sent = Record.of("911", op="sent", seq=m.sequence_number, dst=route[1])
        return [sent, *self._send_911_msg(m)]

    # ------------------------------------------------------------------ leaving

    def _leave(self, now: int) -> list[Effect]:
        """Decision (the paper has no leave): pass the token on without this node."""
        out = self.lock.release("leave")
        token = self.token
        self.stopped = True
        out += [CancelTimer(EATING_TIMER), CancelTimer(HUNGRY_TIMER), CancelTimer(STARVING_TIMER)]
        if token is not None and len(token.nodelist) > 1:
            nxt = next_after(token.nodelist, self.node_id)
            nodelist = without(token.nodelist, self.node_id)
            token = token.with_(
                sequence_number=token.sequence_number + 1,
                nodelist=nodelist,
                current=nodelist.index(nxt),
                destination=nodelist.index(nxt),
                reserved_by=(),
            )
            out.append(Send(nxt, token, reliable=True))
            out.append(Record.of("token", op="sent", seq=token.sequence_number, dst=nxt))
        self.token = None
        return out

    # ------------------------------------------------------------------ trace and storage

    def status(self) -> dict[str, Any]:
        """The fields of the ``state`` trace row, written with its cause at the moments
        :meth:`_record_state` is called."""
        return {
            "view_state": self.view_state.value,
            "token_state": self.token_state.value,
            "local_view": list(self.local_view),
            "token_seq": self.last_token_seq,
            "global_view_number": self.global_view_number,
        }

    def _record_state(self, cause: str) -> StateChanged:
        return self.fsm.state_changed(cause=cause)

    def snapshot(self) -> Snapshot:
        return Snapshot(
            self.incarnation,
            tuple(
                GlobalViewEntry(i, m or (), m is None) for i, m in sorted(self.global_view.items())
            ),
            self.global_view_number,
            self.last_token,
            self.local_view,
            self.highest_reserved,
            self.multicast.snapshot(),
        )

    def _persist(self) -> Persist:
        return Persist(STATE_KEY, encode(self.snapshot(), sender=self.node_id))


def _load(raw: bytes | None) -> Snapshot | None:
    if raw is None:
        return None
    try:
        msg = decode(raw).msg
    except (DecodeError, EncodeError):
        return None
    return msg if type(msg) is Snapshot else None


def _drop(reason: str, **fields: Any) -> Record:
    return Record.of("drop", reason=reason, **fields)


def _token_dropped(token: Token, peer: NodeId, reason: str) -> Record:
    return Record.of("token", op="dropped", seq=token.sequence_number, peer=peer, reason=reason)
