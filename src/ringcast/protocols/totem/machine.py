"""The Totem single-ring machine: sans-IO, ``handle(event, now) -> effects``.

Every event is classified into one of the Totem paper's events (:class:`~._state.Ev`) and run
through the transition table of :mod:`._state` by :class:`ringcast.core.fsm.Driver`: the table
names the action (one ``_act_`` method, ``(now, *args) -> effects``) and the states it may
lead to; :meth:`TotemMachine._set_state` reports each move to the driver, which checks it.
Ordering lives in :mod:`.ordering`, membership bookkeeping in :mod:`.membership`,
recovery in :mod:`.recovery`, flow control in :mod:`.flow`, packing in :mod:`.packing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ringcast.core.effects import (
    Backpressure,
    CancelTimer,
    Deliver,
    Effect,
    InstallView,
    Multicast,
    Persist,
    Record,
    Send,
    SetTimer,
    install_view,
    leader_of_view,
)
from ringcast.core.events import Event, Received, Start, Stop, Submit, TimerFired
from ringcast.core.fsm import Driver
from ringcast.core.ids import View
from ringcast.core.machine import MachineContext
from ringcast.protocols.totem import _validate, flow
from ringcast.protocols.totem._messages import (
    CommitToken,
    Join,
    Mcast,
    MembEntry,
    MergeDetect,
    RecoveryMcast,
    RingId,
    Token,
    TokenAck,
)
from ringcast.protocols.totem._state import INITIAL, TABLE, Action, Ev, State
from ringcast.protocols.totem.membership import Gatherer, new_commit_token
from ringcast.protocols.totem.ordering import RingLog
from ringcast.protocols.totem.packing import Packer, Reassembler
from ringcast.protocols.totem.recovery import RecoveryPlan, make_plan, old_ring_deliveries

T_TOKEN_LOSS = "token_loss"
T_TOKEN_RETRANSMIT = "token_retransmit"
T_TOKEN_HOLD = "token_hold"
T_JOIN = "join"
T_CONSENSUS = "consensus"
T_SILENCE = "silence"
STORAGE_KEY = "ring_seq"

OP, GA, CO, RE = State.OPERATIONAL, State.GATHER, State.COMMIT, State.RECOVERY
Out = list[Effect]


def transitional_view_id(new: RingId, old: RingId) -> str:
    """The id of the transitional configuration between ``old`` and ``new``: "new/t/old".

    Unique per configuration: the members that share the old ring and enter the new one.
    """
    return f"{new}/t/{old}"


# The two events of every frame and every token, read once: a member read through its
# enum class is a Python-level lookup on each use (Python 3.11).
_MCAST, _TOKEN = Ev.MCAST, Ev.TOKEN


class TotemMachine:
    """One node's Totem protocol instance (the Totem paper; the corosync Totem slides)."""

    def __init__(self, ctx: MachineContext, settings: Mapping[str, Any]) -> None:
        self.node_id = ctx.node_id
        self.ctx = ctx
        s = settings
        # The token loss timeout in force: a rotation crosses every member, so a large
        # ring gets at least token_per_member per configured node (docs/protocols/
        # totem.md, "A token timeout that grows with the ring"; corosync's
        # token_coefficient does the same).
        rotation = s["token_per_member"] * len(set(ctx.peers) | {ctx.node_id})
        self.token_timeout: int = max(s["token_timeout"], rotation)
        self.token_retransmit_timeout: int = s["token_retransmit_timeout"]
        self.token_hold: int = s["token_hold"]
        self.join_timeout: int = s["join_timeout"]
        # ... and the consensus timeout keeps corosync's rule against that floor (1.2 x),
        # so a large ring's Gather is not cut short either.
        self.consensus_timeout: int = max(s["consensus_timeout"], 6 * rotation // 5)
        self.join_silence_const: int = s["join_silence_const"]
        self.silence_watch: set[str] = set()  # last-ring members the silence timer judges
        self.fail_unanswered: bool = s["fail_unanswered"]
        self.merge_detect_timeout: int = s["merge_detect_timeout"]
        self.fail_to_recv_const: int = s["fail_to_recv_const"]
        self.seqno_unchanged_const: int = s["seqno_unchanged_const"]
        self.window_size: int = s["window_size"]
        self.max_messages: int = s["max_messages"]
        self.max_pending: int = s["max_pending"]
        me = ctx.node_id
        self.state: State = INITIAL
        self.ring_id = RingId(0, me)  # my_ring_id: the ring last installed (or booted alone)
        self.memb: tuple[str, ...] = (me,)  # its members, in ring order
        self.log = RingLog(self.ring_id)
        self.highest_seq = 0  # the largest ring seq known (persisted)
        self.gather = Gatherer(me)
        self.commit: CommitToken | None = None  # the accepted commit token (Commit, Recovery)
        self.new_log: RingLog | None = None
        self.plan: RecoveryPlan | None = None
        self.failed_deliver_memb: tuple[str, ...] = ()
        """my_deliver_memb of every recovery of the current old ring this node took part
        in and did not finish (the Totem paper, "Failure of Recovery"); its commit token entry
        carries it, and installing a ring clears it."""
        self.packer = Packer(s["frame_size"])
        self.reasm = Reassembler()
        self.blocked = False
        self.started = False
        # token bookkeeping
        self.last_token_seq = -1
        self.last_sent: tuple[str, Token | CommitToken] | None = None
        self.rt_armed = False
        self.sent_seq = 0  # the seq on the token last passed on
        self.sent_at = 0  # when the regular token was passed on (retransmissions do not count)
        self.held: Token | None = None
        self.my_prev_trc = 0
        self.my_pbl = 0
        self.unchanged = 0
        self.prev_seq = -1
        self.fr_count = 0
        self.fr_aru = -1
        self.last_merge_detect = 0
        self.alone_ok = False  # a consensus timeout passed: a ring of one may form
        self.now = 0
        self.fsm = Driver(
            TABLE,
            self,
            {
                Action.MCAST: self._act_mcast,
                Action.TOKEN: self._act_token,
                Action.FOREIGN: self._act_foreign,
                Action.JOIN: self._act_join,
                Action.COMMIT_TOKEN: self._act_commit_token,
                Action.TOKEN_LOSS: self._act_token_loss,
                Action.TOKEN_RETRANSMIT: self._act_token_retransmit,
                Action.TOKEN_ACK: self._act_token_ack,
                Action.JOIN_TIMEOUT: self._act_join_timeout,
                Action.CONSENSUS_TIMEOUT: self._act_consensus_timeout,
                Action.SILENCE_TIMEOUT: self._act_silence_timeout,
                Action.FAIL_TO_RECV: self._act_fail_to_recv,
            },
            status=self.status,
        )

    # ------------------------------------------------------------------ dispatch

    def _set_state(self, new: State, out: Out, reason: str) -> None:
        """Move to ``new``: the driver checks the move against the event in hand."""
        if new is self.state:
            return
        bad = self.fsm.moved(new)
        if bad is not None:  # the machine's own bug: recorded, and it carries on
            out.append(bad)
        prev, self.state = self.state, new
        out.append(self.fsm.state_changed(prev=prev.value, reason=reason))

    def status(self) -> dict[str, Any]:
        """The field of the ``state`` trace row that is the machine's own: written, with
        the state left and why, at every move (:meth:`_set_state`)."""
        return {"state": self.state.value}

    def handle(self, event: Event, now: int) -> list[Effect]:
        out: Out = []
        self.now = now
        tp = type(event)
        if tp is Received:
            self._received(event.src, event.msg, out)  # type: ignore[union-attr]
        elif tp is TimerFired:
            self._timer(event.name, out)  # type: ignore[union-attr]
        elif tp is Submit:
            self._submit(event, out)  # type: ignore[arg-type]
        elif tp is Start:
            self._start(out)
        elif tp is Stop:
            self._stop(out)
        return out

    def _received(self, src: str, msg: Any, out: Out) -> None:
        tp = type(msg)
        bad = _validate.source(src)
        if bad is not None:
            out.append(Record.of("drop", reason=f"invalid {tp.__name__}: {bad}"))
            return
        if tp is Mcast or tp is RecoveryMcast:
            rid = msg.ring_id
            new_log = self.new_log
            log: RingLog | None
            if rid == self.log.ring_id:
                log = self.log
            elif new_log is not None and rid == new_log.ring_id:
                log = new_log
            else:
                log = None
            check = _validate.frame if tp is Mcast else _validate.recovery_frame
            bad = check(
                msg, my_aru=None if log is None else log.my_aru, window_size=self.window_size
            )
            if bad is not None:
                self._invalid(msg, bad, out)
            elif rid == self.ring_id or (self.new_log is not None and rid == self.new_log.ring_id):
                out += self.fsm.step(_MCAST, self.now, msg)
            elif src not in self.memb or rid.seq > self.ring_id.seq:
                out += self.fsm.step(Ev.FOREIGN, self.now, src, rid.seq)
            else:
                out.append(Record.of("drop", reason="stale message", ring=str(rid)))
        elif tp is Token:
            log = self.new_log if self.state is RE else self.log
            mine = log if log is not None and msg.ring_id == log.ring_id else None
            bad = _validate.token(
                msg,
                my_aru=None if mine is None else mine.my_aru,
                window_size=self.window_size,
                members=None if mine is None else self._ring_members(),
            )
            if bad is not None:
                self._invalid(msg, bad, out)
            else:
                out += self.fsm.step(_TOKEN, self.now, msg, False, src)
        elif tp is TokenAck:
            bad = _validate.token_ack(msg)
            if bad is not None:
                self._invalid(msg, bad, out)
            else:
                out += self.fsm.step(Ev.TOKEN_ACK, self.now, src, msg)
        elif tp is Join:
            bad = _validate.join(msg, src)
            if bad is not None:
                self._invalid(msg, bad, out)
            else:
                out += self.fsm.step(Ev.JOIN, self.now, src, msg)
        elif tp is CommitToken:
            bad = _validate.commit_token(msg)
            if bad is not None:
                self._invalid(msg, bad, out)
            else:
                out += self.fsm.step(Ev.COMMIT_TOKEN, self.now, msg)
        elif tp is MergeDetect:
            bad = _validate.merge_detect(msg, src)
            if bad is not None:
                self._invalid(msg, bad, out)
            elif msg.ring_id != self.ring_id and src not in self.memb:
                out += self.fsm.step(Ev.FOREIGN, self.now, src, msg.ring_id.seq)
        else:
            out.append(Record.of("drop", reason="unknown message", type=tp.__name__))

    @staticmethod
    def _invalid(msg: Any, problem: str, out: Out) -> None:
        """Drop a message a field of which failed validation (:mod:`._validate`)."""
        out.append(Record.of("drop", reason=f"invalid {type(msg).__name__}: {problem}"))

    def _timer(self, name: str, out: Out) -> None:
        if name == T_TOKEN_LOSS:
            out += self.fsm.step(Ev.TOKEN_LOSS, self.now)
        elif name == T_TOKEN_RETRANSMIT:
            self.rt_armed = False
            out += self.fsm.step(Ev.TOKEN_RETRANSMIT, self.now)
        elif name == T_TOKEN_HOLD:
            held, self.held = self.held, None
            if held is not None:
                out += self.fsm.step(_TOKEN, self.now, held, True)
        elif name == T_JOIN:
            out += self.fsm.step(Ev.JOIN_TIMEOUT, self.now)
        elif name == T_CONSENSUS:
            out += self.fsm.step(Ev.CONSENSUS_TIMEOUT, self.now)
        elif name == T_SILENCE:
            out += self.fsm.step(Ev.SILENCE_TIMEOUT, self.now)
        else:
            out.append(Record.of("drop", reason="unknown timer", timer=name))

    # ------------------------------------------------------------------ lifecycle

    def _start(self, out: Out) -> None:
        if self.started:
            out.append(Record.of("drop", reason="second start"))
            return
        self.started = True
        ctx = self.ctx
        try:
            stored = int(ctx.storage.get(STORAGE_KEY, b"0"))
        except ValueError:
            stored = 0
        # A ring this node represented has seq <= stored, so (stored + 1, me) is fresh.
        self.highest_seq = stored + 1
        out.append(Persist(STORAGE_KEY, str(self.highest_seq).encode()))
        self.ring_id = RingId(self.highest_seq, self.node_id)
        self.log = RingLog(self.ring_id)
        out.append(self.fsm.state_changed(prev="", reason="start"))  # in INITIAL
        procs = {self.node_id}
        if not ctx.joining and self.node_id in ctx.members:
            procs |= set(ctx.members)
        self._enter_gather(out, procs, set(), fresh=True)

    def _stop(self, out: Out) -> None:
        # Leave: a join naming this node failed makes the others drop it at once.
        me = self.node_id
        out.append(Multicast(Join(me, self.highest_seq, (me,), (me,))))

    def _submit(self, ev: Submit, out: Out) -> None:
        packer = self.packer
        packer.push(ev.msg_id, ev.payload, ev.order == "safe")
        if not self.blocked and len(packer) >= self.max_pending:
            self.blocked = True
            out.append(Backpressure(True))
        if self.held is not None:  # the idle token waits here: use it now
            held, self.held = self.held, None
            out.append(CancelTimer(T_TOKEN_HOLD))
            out += self.fsm.step(_TOKEN, self.now, held, True)

    # ------------------------------------------------------------------ actions

    def _act_mcast(self, now: int, m: Mcast | RecoveryMcast) -> list[Effect]:
        out: Out = []
        if self.rt_armed and m.seq > self.sent_seq and m.sender != self.node_id:
            self.rt_armed = False  # a newer frame: a later node holds the token
            out.append(CancelTimer(T_TOKEN_RETRANSMIT))
        log = self.log
        if m.ring_id != log.ring_id:
            log = self.new_log  # type: ignore[assignment]
            if log is None:
                return out
            if type(m) is RecoveryMcast and log.add(m):
                plan = self.plan
                old = m.old
                if plan is not None and old.ring_id == self.log.ring_id:
                    plan.recovered.add(old.seq)
                    self.log.add(old)
            else:
                log.add(m)
            return out
        if self.plan is not None:
            # Recovery step 1 fixed the old-ring messages to exchange when the plan was
            # made; a frame of the old ring that arrives later (a retransmission, or a
            # member left behind still sending) reached this node only, so delivering it
            # would break the transitional configuration's agreement (hostile seed 8057).
            # If another member holds it, it arrives again as a RecoveryMcast.
            out.append(Record.of("drop", reason="old-ring message after the recovery plan"))
            return out
        if log.add(m) and self.state is OP:
            self._deliver_ready(out)
        return out

    def _deliver_ready(self, out: Out) -> None:
        """Agreed: every lower seq delivered; safe: also covered by ``safe_upto``."""
        log = self.log
        msgs = log.msgs
        d = log.delivered
        limit = log.my_aru
        safe_upto = log.safe_upto
        while d < limit:
            m = msgs[d + 1]
            if type(m) is Mcast:
                if m.safe:
                    if d + 1 > safe_upto:
                        break
                    self._emit(m, "safe", out)
                else:
                    self._emit(m, "agreed", out)
            d += 1
        log.delivered = d

    def _emit(self, m: Mcast, order: str, out: Out) -> None:
        sender = m.sender
        for c in m.chunks:
            if c.frags == 1:
                out.append(Deliver(c.msg_id, c.payload, order, sender))
            else:
                whole = self.reasm.feed(sender, c)
                if whole is not None:
                    out.append(Deliver(c.msg_id, whole, order, sender))

    def _act_foreign(self, now: int, src: str, ring_seq: int = 0) -> list[Effect]:
        out: Out = []
        if self.state is OP:
            self._enter_gather(
                out, set(self.memb) | {src}, set(), reason=f"foreign message from {src}"
            )
            return out
        changed = False
        if ring_seq > self.highest_seq:
            # Gather: a ring newer than this node's round exists, so that round is over
            # (its fail set with it): the sender formed a ring this node is not in.
            self._new_round(ring_seq)
            changed = True
        if src not in self.gather.my_fail_set and self.gather.add_procs({src}):
            changed = True
        if changed:
            self._send_join(out)
        return out

    # ---- the token

    def _act_token(self, now: int, tok: Token, held: bool = False, src: str = "") -> list[Effect]:
        out: Out = []
        recovering = self.state is RE
        log = self.new_log if recovering else self.log
        if log is None or tok.ring_id != log.ring_id:
            out.append(Record.of("drop", reason="token of another ring", ring=str(tok.ring_id)))
            return out
        if not held:
            if tok.token_seq <= self.last_token_seq:
                out.append(Record.of("drop", reason="duplicate token", token_seq=tok.token_seq))
                if self.fail_unanswered and src and src != self.node_id:
                    # A retransmission: the predecessor saw no sign of it; say it came
                    # (with fail_unanswered off, the Totem paper's behaviour: no answer).
                    out.append(Send(src, TokenAck(tok.ring_id, tok.token_seq)))
                return out
            self.last_token_seq = tok.token_seq
            if self.rt_armed:
                self.rt_armed = False
                out.append(CancelTimer(T_TOKEN_RETRANSMIT))
            out.append(SetTimer(T_TOKEN_LOSS, self.token_timeout))
            # Failure to receive: the aru has not moved for fail_to_recv_const visits (in
            # Recovery too: the new ring's aru, docs "Failure to receive in Recovery").
            if tok.aru_id and tok.aru_id != self.node_id and tok.aru < tok.seq:
                if tok.aru == self.fr_aru:
                    self.fr_count += 1
                    if self.fr_count >= self.fail_to_recv_const:
                        out += self.fsm.step(Ev.FAIL_TO_RECV, self.now, tok.aru_id)
                        return out
                else:
                    self.fr_aru, self.fr_count = tok.aru, 0
            else:
                self.fr_count = 0
            # Idle: hold the token a while before passing it on (corosync's token hold).
            if tok.seq == self.prev_seq:
                self.unchanged += 1
            else:
                self.prev_seq, self.unchanged = tok.seq, 0
            if (
                not recovering
                and self.unchanged >= self.seqno_unchanged_const
                and not self.packer.queue
                and not tok.rtr
                and tok.aru == tok.seq
            ):
                self.held = tok
                out.append(SetTimer(T_TOKEN_HOLD, self.token_hold))
                return out
        self._process_token(tok, log, recovering, out)
        return out

    def _process_token(self, tok: Token, log: RingLog, recovering: bool, out: Out) -> None:
        me = self.node_id
        log.stabilize(tok.aru)
        plan = self.plan
        if recovering:
            assert plan is not None
            plan.visits += 1
            q = plan.queue
            while q and q[0] in plan.recovered:
                q.popleft()
            if plan.visits >= 2 and not tok.retrans_flg and not q and log.safe_upto >= tok.rec_seq:
                self._install(out)
                log = self.log
                recovering = False
        elif self.state is OP:
            self._deliver_ready(out)
        # 1. retransmissions the rtr asks for that this node holds
        msgs = log.msgs
        rtr = tok.rtr
        keep: tuple[int, ...] = rtr
        if rtr:
            kept = []
            for s in rtr:
                m = msgs.get(s)
                if m is not None:
                    out.append(Multicast(m))
                    out.append(Record.of("retransmit", seq=s, ring=str(log.ring_id)))
                else:
                    kept.append(s)
            keep = tuple(kept)
        # 2. new messages (recovery: the old ring's messages), flow controlled
        seq0 = seq = tok.seq
        ring = log.ring_id
        if recovering:
            assert plan is not None
            q = plan.queue
            my_tbl = len(q)
        else:
            my_tbl = len(self.packer)
        tok_fcc = flow.observed_fcc(
            fcc=tok.fcc, my_prev_trc=self.my_prev_trc, seq=seq, last_seq=self.sent_seq
        )
        n = flow.allowance(
            window_size=self.window_size,
            max_messages=self.max_messages,
            fcc=tok_fcc,
            my_prev_trc=self.my_prev_trc,
            backlog=tok.backlog,
            my_pbl=self.my_pbl,
            my_tbl=my_tbl,
            seq=seq,
            aru=tok.aru,
        )
        sent = 0
        if recovering:
            assert plan is not None
            old = self.log.msgs
            while sent < n and q:
                s = q.popleft()
                if s in plan.recovered:
                    continue
                seq += 1
                frame = RecoveryMcast(ring, seq, me, old[s])  # type: ignore[arg-type]
                plan.recovered.add(s)
                log.add(frame)
                out.append(Multicast(frame))
                sent += 1
            my_bl = len(q)
        else:
            packer = self.packer
            while sent < n:
                mcast = packer.next_frame(ring, seq + 1, me)
                if mcast is None:
                    break
                seq += 1
                log.add(mcast)
                out.append(Multicast(mcast))
                sent += 1
            my_bl = len(packer)
            if self.blocked and my_bl <= self.max_pending // 2:
                self.blocked = False
                out.append(Backpressure(False))
            if sent and self.state is OP:
                self._deliver_ready(out)
        # 3. the aru / aru_id rules, then my own gaps into rtr
        aru, aru_id = log.update_aru(tok.aru, tok.aru_id, seq0, seq, me)
        if log.my_aru < seq:
            keep = keep + tuple(log.missing(seq, keep))
        # 4. flow control fields
        fcc = max(tok_fcc - self.my_prev_trc, 0) + sent
        backlog = max(tok.backlog - self.my_pbl, 0) + my_bl
        self.my_prev_trc, self.my_pbl = sent, my_bl
        # 5. recovery progress
        retrans_flg, retrans_id, rec_seq = tok.retrans_flg, tok.retrans_id, tok.rec_seq
        if recovering and (sent or my_bl):
            retrans_flg, retrans_id = True, me
            if sent:
                rec_seq = seq
        elif retrans_flg and retrans_id == me:
            # The flag came back unchanged: clear it. Also once installed: an honest
            # member never installs with its own flag still set (it clears it first),
            # so the flag is a corrupted token's, and the members still in Recovery
            # would wait for ever for someone to clear it (the garble soak).
            retrans_flg, retrans_id = False, ""
        if self.state is OP:
            log.free()
            if (
                me == self.memb[0]
                and self.now - self.last_merge_detect >= self.merge_detect_timeout
            ):
                self.last_merge_detect = self.now
                out.append(Multicast(MergeDetect(ring, me)))
        log.last_aru = aru
        new = Token(
            ring, tok.token_seq + 1, seq, aru, aru_id, keep, fcc, backlog,
            retrans_flg, retrans_id, rec_seq,
        )  # fmt: skip
        out.append(
            Record.of(
                "token", op="sent", token_seq=new.token_seq, seq=seq, aru=aru, rtr=len(keep),
                fcc=fcc, backlog=backlog,
            )
        )  # fmt: skip
        self._pass_token(new, out)

    def _next_of(self, memb: tuple[str, ...]) -> str:
        i = memb.index(self.node_id)
        return memb[(i + 1) % len(memb)]

    def _ring_members(self) -> tuple[str, ...]:
        """The members of the ring the token circulates on: the new ring's in Recovery."""
        return self.plan.memb if self.state is RE and self.plan is not None else self.memb

    def _pass_token(self, tok: Token, out: Out) -> None:
        memb = self._ring_members()
        nxt = self._next_of(memb)
        self.last_token_seq = tok.token_seq
        if nxt == self.node_id:  # a ring of one: the token comes back after the hold time
            self.held = tok
            out.append(SetTimer(T_TOKEN_HOLD, self.token_hold))
            # It has come back: a ring of one never loses its token. (Held tokens do not
            # rearm the loss timer in _act_token, so a ring of one fell back to Gather
            # every token_timeout, and each time its joins broke the others' rings.)
            out.append(SetTimer(T_TOKEN_LOSS, self.token_timeout))
            return
        out.append(Send(nxt, tok))
        self.last_sent = (nxt, tok)
        self.sent_seq = tok.seq
        self.sent_at = self.now
        self.rt_armed = True
        out.append(SetTimer(T_TOKEN_RETRANSMIT, self.token_retransmit_timeout))

    def _stop_retransmit(self, out: Out) -> None:
        if self.rt_armed:
            self.rt_armed = False
            out.append(CancelTimer(T_TOKEN_RETRANSMIT))

    def _act_token_retransmit(self, now: int) -> list[Effect]:
        out: Out = []
        if self.last_sent is None:
            return out
        dst, tok = self.last_sent
        out.append(Send(dst, tok))
        out.append(Record.of("token", op="retransmit", token_seq=tok.token_seq, dst=dst))
        self.rt_armed = True
        out.append(SetTimer(T_TOKEN_RETRANSMIT, self.token_retransmit_timeout))
        return out

    def _act_token_ack(self, now: int, src: str, ack: TokenAck) -> list[Effect]:
        """The next node answered a retransmission: it has the token; stop resending."""
        out: Out = []
        sent = self.last_sent
        if (
            sent is not None
            and sent[0] == src
            and type(sent[1]) is Token
            and sent[1].ring_id == ack.ring_id
            and sent[1].token_seq == ack.token_seq
        ):
            self._stop_retransmit(out)
        return out

    def _act_token_loss(self, now: int) -> list[Effect]:
        out: Out = []
        self._enter_gather(
            out,
            set(self.memb),
            self.gather.my_fail_set if self.state is not OP else set(),
            reason="token loss",
        )
        return out

    def _act_fail_to_recv(self, now: int, node: str) -> list[Effect]:
        out: Out = []
        self._enter_gather(out, set(self.memb), {node}, reason=f"failure to receive at {node}")
        return out

    # ---- membership: Gather

    def _enter_gather(
        self,
        out: Out,
        procs: set[str],
        fails: set[str],
        *,
        reason: str = "start",
        fresh: bool = False,
    ) -> None:
        if self.state is not GA or fresh:
            if self.state is not OP and not fresh:
                procs = procs | self.gather.my_proc_set
            unanswered = self._unanswered_next()
            if unanswered is not None:
                fails = fails | {unanswered}
                out.append(Record.of("unanswered", node=unanswered))
            self.gather.start(procs, fails)
            self.alone_ok = False
            if self.join_silence_const and self.state is not GA:
                # A ring (or a commit) broke up: its members that stay silent are failed
                # before the consensus timeout (docs/protocols/totem.md, "Failing a
                # silent member early").
                self.silence_watch = set(self.memb) - {self.node_id}
                out.append(SetTimer(T_SILENCE, self.join_silence_const * self.join_timeout))
        self._leave_ring_state(out)
        self._set_state(GA, out, reason)
        self._send_join(out)
        out.append(SetTimer(T_CONSENSUS, self.consensus_timeout))
        self._check_consensus(out)

    def _unanswered_next(self) -> str | None:
        """The next node, if ``fail_unanswered`` is on and the regular token this node
        passed it has gone unanswered for half the token timeout: no sign that it moved
        on, and no :class:`TokenAck` for any retransmission (docs/protocols/totem.md,
        "Failing the next node when the token goes unanswered")."""
        sent = self.last_sent
        if not (self.fail_unanswered and self.rt_armed and sent is not None):
            return None
        if type(sent[1]) is not Token:
            return None
        if 2 * (self.now - self.sent_at) < self.token_timeout:
            return None
        return sent[0]

    def _leave_ring_state(self, out: Out) -> None:
        """Stop the token machinery; forget a new ring that was not installed."""
        for t in (T_TOKEN_LOSS, T_TOKEN_RETRANSMIT, T_TOKEN_HOLD):
            out.append(CancelTimer(t))
        self.rt_armed = False
        self.held = None
        self.last_sent = None
        self.commit = None
        self.new_log = None
        if self.plan is not None:  # a recovery left unfinished (seed: Failure of Recovery)
            self.failed_deliver_memb = tuple(
                sorted(set(self.failed_deliver_memb) | set(self.plan.deliver_memb))
            )
        self.plan = None

    def _send_join(self, out: Out) -> None:
        out.append(Multicast(self.gather.join_msg(self.highest_seq)))
        out.append(SetTimer(T_JOIN, self.join_timeout))

    def _act_join(self, now: int, src: str, join: Join) -> list[Effect]:
        out: Out = []
        g = self.gather
        state = self.state
        if src == self.node_id:
            return out
        if state is not GA and self.node_id in join.fail_set:
            # Decision: a node in Gather that has failed this one will not agree to a ring
            # with it; unless it is a member of the ring (or commit) this node is in, its
            # join is not a reason to leave: its ring and ours merge once both operate.
            ring = self.commit.memb_list if state is not OP and self.commit else self.memb
            if src not in ring:
                out.append(Record.of("drop", reason="join failing this node", src=src))
                return out
        if state is OP:
            if src in self.memb and join.ring_seq < self.ring_id.seq:
                out.append(Record.of("drop", reason="stale join", src=src))
                return out
            self._enter_gather(out, set(self.memb), set(), reason=f"join from {src}")
            self._merge_join(out, src, join)
            return out
        if state is CO or state is RE:
            commit = self.commit
            if (
                commit is not None
                and src in commit.memb_list
                and (g.matches(join) or join.ring_seq < commit.ring_id.seq)
            ):
                return out  # a late join from before the commit: the commit token settles it
            self._enter_gather(out, set(), set(), reason=f"join from {src}")
            self._merge_join(out, src, join)
            return out
        self._merge_join(out, src, join)
        return out

    def _merge_join(self, out: Out, src: str, join: Join) -> None:
        """Merge a join in Gather, its fail_set scoped to its round (``Join.ring_seq``).

        A join of a newer round than this node's (``highest_seq``) starts the new round:
        the old fail set is dropped (:meth:`Gatherer.new_round`) and the join is merged,
        even from a node this node had failed (that was in the round that ended). A join
        of this round from a failed node is ignored; one of an older round adds only its
        proc_set (:meth:`Gatherer.merge`).
        """
        g = self.gather
        if join.ring_seq > self.highest_seq:
            self._new_round(join.ring_seq)
        elif src in g.my_fail_set:
            return
        if g.merge(src, join, join.ring_seq == self.highest_seq):
            self._send_join(out)
        self._check_consensus(out)

    def _new_round(self, ring_seq: int) -> None:
        """A join or a ring of a larger ring seq: the membership round this node was
        gathering in is over; start the newer one with an empty fail set."""
        self.highest_seq = ring_seq
        self.gather.new_round()

    def _check_consensus(self, out: Out) -> None:
        g = self.gather
        if self.state is GA and g.agreed() and g.representative() == self.node_id:
            memb = g.members()
            if len(memb) == 1 and not self.alone_ok:
                return  # alone: wait one consensus timeout for others' joins first
            ct = new_commit_token(self.highest_seq, self.node_id, memb, self._memb_entry())
            self.highest_seq = ct.ring_id.seq
            out.append(Persist(STORAGE_KEY, str(self.highest_seq).encode()))
            self.commit = ct
            self.last_token_seq = -1
            self._enter_commit(out, "consensus: sent the commit token")
            self._forward_commit(ct, out)

    def _memb_entry(self) -> MembEntry:
        log = self.log
        return MembEntry(
            self.node_id, log.ring_id, log.my_aru, log.delivered, log.high_seq,
            log.my_aru >= log.high_seq, self.failed_deliver_memb,
        )  # fmt: skip

    def _act_join_timeout(self, now: int) -> list[Effect]:
        out: Out = []
        self._send_join(out)
        return out

    def _act_consensus_timeout(self, now: int) -> list[Effect]:
        out: Out = []
        g = self.gather
        self.alone_ok = True
        g.fail_missing()  # agreed yet no commit token came, or some never answered: start over
        self._send_join(out)
        out.append(SetTimer(T_CONSENSUS, self.consensus_timeout))
        self._check_consensus(out)
        return out

    def _act_silence_timeout(self, now: int) -> list[Effect]:
        """``join_silence_const`` join timeouts into Gather: a member of the ring that
        broke up from which no join has come since is failed now, not at the consensus
        timeout (a live member in Gather rebroadcasts its join every join timeout, and
        one still Operational enters Gather on the first join it receives)."""
        out: Out = []
        silent = self.gather.fail_unheard(self.silence_watch)
        self.silence_watch = set()
        if not silent:
            return out
        out.append(Record.of("silent", nodes=sorted(silent)))
        self._send_join(out)
        self._check_consensus(out)
        return out

    # ---- membership: Commit

    def _enter_commit(self, out: Out, reason: str) -> None:
        for t in (T_JOIN, T_CONSENSUS, T_SILENCE):
            out.append(CancelTimer(t))
        self._set_state(CO, out, reason)
        out.append(SetTimer(T_TOKEN_LOSS, self.token_timeout))

    def _forward_commit(self, ct: CommitToken, out: Out) -> None:
        nxt = self._next_of(ct.memb_list)
        self.last_token_seq = ct.token_seq
        if nxt == self.node_id:
            out += self.fsm.step(Ev.COMMIT_TOKEN, self.now, ct, True)
            return
        out.append(Send(nxt, ct))
        self.last_sent = (nxt, ct)  # type: ignore[assignment]
        self.sent_seq = 1 << 62  # no frame is evidence for a commit token
        self.rt_armed = True
        out.append(SetTimer(T_TOKEN_RETRANSMIT, self.token_retransmit_timeout))

    def _act_commit_token(self, now: int, ct: CommitToken, local: bool = False) -> list[Effect]:
        out: Out = []
        me = self.node_id
        memb = ct.memb_list
        if me not in memb or not memb:
            out.append(Record.of("drop", reason="commit token without me"))
            return out
        full = len(ct.entries) == len(memb)
        state = self.state
        commit = self.commit
        if state is CO and commit is not None and full and ct.ring_id == commit.ring_id:
            # The second rotation, checked before anything changes: it must carry the
            # entries this node accepted (its own among them) for the recovery plan.
            bad = _validate.second_rotation(ct, commit)
            if bad is not None:
                self._invalid(ct, bad, out)
                return out
        if state is GA:
            if ct.ring_id.seq <= self.highest_seq or memb != self.gather.members():
                out.append(
                    Record.of("drop", reason="commit token not agreed", ring=str(ct.ring_id))
                )
                return out
            if full or len(ct.entries) != memb.index(me) or ct.memb_index != len(ct.entries) - 1:
                out.append(
                    Record.of("drop", reason="commit token out of turn", ring=str(ct.ring_id))
                )
                return out
            # First rotation: add my entry, persist the new ring seq, pass it on.
            self._stop_retransmit(out)
            self.highest_seq = ct.ring_id.seq
            out.append(Persist(STORAGE_KEY, str(self.highest_seq).encode()))
            new = CommitToken(
                ct.ring_id, ct.token_seq + 1, memb, len(ct.entries),
                (*ct.entries, self._memb_entry()),
            )  # fmt: skip
            self.commit = new
            self._enter_commit(out, f"commit token for {ct.ring_id}")
            self._forward_commit(new, out)
            return out
        if commit is None or ct.ring_id != commit.ring_id or not full:
            out.append(Record.of("drop", reason="unexpected commit token", ring=str(ct.ring_id)))
            return out
        if not local and ct.token_seq <= self.last_token_seq:
            out.append(Record.of("drop", reason="duplicate commit token"))
            return out
        # Accepted: only now does it show that the token moved on. (A late copy of the
        # first rotation, which the predecessor still retransmits, used to cancel this
        # node's own retransmission: a lost forward then lost the commit token for good.)
        self._stop_retransmit(out)
        if state is CO:
            # Second rotation: every member's entry is known; shift to Recovery.
            self.commit = ct
            self._enter_recovery(ct, out)
            new = CommitToken(ct.ring_id, ct.token_seq + 1, memb, memb.index(me), ct.entries)
            self._forward_commit(new, out)
            return out
        # Recovery, at the representative: the third arrival becomes the regular token.
        if me != memb[0]:
            out.append(Record.of("drop", reason="commit token in recovery"))
            return out
        self.last_token_seq = ct.token_seq
        tok = Token(ct.ring_id, ct.token_seq + 1, 0, 0, "", (), 0, 0)
        out.append(SetTimer(T_TOKEN_LOSS, self.token_timeout))
        out += self.fsm.step(_TOKEN, self.now, tok, True)
        return out

    # ---- recovery

    def _enter_recovery(self, ct: CommitToken, out: Out) -> None:
        self.plan = make_plan(ct, self.log)
        self.new_log = RingLog(ct.ring_id)
        self.my_prev_trc = self.my_pbl = 0
        self.unchanged, self.prev_seq = 0, -1
        self.fr_count, self.fr_aru = 0, -1
        self._set_state(RE, out, f"commit token second rotation for {ct.ring_id}")
        out.append(SetTimer(T_TOKEN_LOSS, self.token_timeout))

    def _install(self, out: Out) -> None:
        """Recovery steps 2-6, atomically (the Totem paper, "Recovery Protocol - Six Steps")."""
        plan = self.plan
        assert plan is not None and self.new_log is not None
        before, after = old_ring_deliveries(self.log, plan.high_ring_delivered, plan.deliver_memb)
        for m in before:
            self._emit(m, "safe" if m.safe else "agreed", out)
        out.append(
            InstallView(
                View(transitional_view_id(plan.new_ring, plan.old_ring), plan.my_trans_memb, True)
            )
        )
        for m in after:
            self._emit(m, "safe" if m.safe else "agreed", out)
        self.reasm.clear()
        view = View(str(plan.new_ring), plan.memb)
        out.extend([*install_view(view), *leader_of_view(view)])
        self.ring_id = plan.new_ring
        self.memb = plan.memb
        self.log = self.new_log
        self.new_log = None
        self.plan = None
        self.failed_deliver_memb = ()  # a new old ring
        self.commit = None
        self.gather.start(set(plan.memb), set())
        self.packer.restart_fragment()
        self.fr_count, self.fr_aru = 0, -1
        self._set_state(OP, out, f"installed {plan.new_ring}")
        self._deliver_ready(out)
