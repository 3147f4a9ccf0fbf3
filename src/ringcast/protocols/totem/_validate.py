"""Validation of every field Totem reads from a received message, before it is used.

A node never trusts a packet: the machine calls the check of a message's type first and,
if it names a problem, drops the message with a ``drop`` trace row (``reason="invalid
<Type>: <problem>"``) and leaves its state unchanged. The checks are named after the
Totem paper's fields ( "Token Fields" and "Membership Protocol - Data Structures"):

- every sequence number (``seq``, ``aru``, ``token_seq``, ``ring_id.seq``, ``my_aru``,
  ``high_delivered``, ``high_seq``, ``rec_seq``, ``ring_seq``) is an integer in
  ``[0, MAX_SEQ]``, with ``aru <= seq``, ``rec_seq <= seq`` on the token and
  ``high_delivered <= my_aru <= high_seq`` in a commit token's entry;
- every node id (``rep``, ``sender``, ``aru_id``, ``retrans_id``, members) is a valid
  node id (:func:`ringcast.core.ids.check_node_id`), ``aru_id``/``retrans_id`` may be
  empty (the Totem paper's null);
- every list is bounded and without duplicates: ``rtr`` (at most ``RTR_MAX`` seqs in
  ``[1, seq]``), ``proc_set`` / ``fail_set`` (at most ``MAX_NODES``, ``fail_set`` within
  ``proc_set``, the sender in ``proc_set``), ``memb_list`` (1 to ``MAX_NODES`` members),
  a commit token's ``entries`` (one per member, in ``memb_list`` order, at most one
  per member: ``entries[i].node == memb_list[i]``), a frame's ``chunks``
  (1 to ``MAX_CHUNKS``, distinct msg ids; a fragment alone in its frame, ``0 <= frag <
  frags <= MAX_FRAGS``);
- ``memb_index`` is an index into ``memb_list``; ``fcc`` and ``backlog`` are in
  ``[0, MAX_COUNT]``;
- a frame's or the token's ``seq`` is at most :func:`ahead` above the receiver's
  ``my_aru`` of that ring: flow control keeps every real frame within ``aru + 2 *
  window_size``, the token's aru is at most the receiver's my_aru at its last visit and
  rises by at most one rotation's frames before the next, so a bad ``seq`` cannot make the
  receiver's retransmission buffer or ``high_seq`` jump.

No loop of the machine is bounded by a packet field: the recovery plan walks the frames
this node holds (:func:`ringcast.protocols.totem.recovery.make_plan`), and the rtr and
retransmission loops are bounded by ``RTR_MAX`` and by what this node holds.
"""

from __future__ import annotations

from ringcast.core.ids import check_node_id
from ringcast.protocols.totem._messages import (
    Chunk,
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
from ringcast.protocols.totem.ordering import RTR_MAX

MAX_SEQ = (1 << 62) - 1
"""Largest sequence number accepted; leaves room for ``seq + 4`` and ``aru + 2 * window``
within the codec's signed 64-bit integers."""

MAX_COUNT = 1 << 40
"""Largest ``fcc`` / ``backlog`` accepted."""

MAX_NODES = 1024
"""Most members a ring, a proc_set or a fail_set may list."""

MAX_CHUNKS = 4096
"""Most chunks in one frame."""

MAX_FRAGS = 1 << 24
"""Most fragments one message may be cut into."""

AHEAD_WINDOWS = 16
"""A frame more than this many windows (plus one frame per possible member) above the
receiver's ``my_aru`` is refused."""


def ahead(window_size: int) -> int:
    """How far above the receiver's ``my_aru`` a frame's or token's ``seq`` may be."""
    return AHEAD_WINDOWS * window_size + MAX_NODES


def _seq(name: str, v: object) -> str | None:
    if type(v) is not int or not 0 <= v <= MAX_SEQ:
        return f"{name} {v!r} out of range"
    return None


_VALID_IDS: set[str] = set()
"""Node ids found valid so far: every packet names a few ids of one cluster, and a set
look-up is the cheapest way to pass them again. Bounded by ``MAX_VALID_IDS``, so a
sender naming ever new ids cannot grow it: those are checked in full each time."""

MAX_VALID_IDS = 4096


def _node(name: str, v: object, *, empty_ok: bool = False) -> str | None:
    if type(v) is str and v in _VALID_IDS:
        return None
    if empty_ok and v == "":
        return None
    try:
        valid = check_node_id(v)
    except ValueError as e:
        return f"{name}: {e}"
    if type(valid) is str and len(_VALID_IDS) < MAX_VALID_IDS:
        _VALID_IDS.add(valid)
    return None


def _nodes(name: str, v: object, *, least: int = 0) -> str | None:
    if type(v) is not tuple or not least <= len(v) <= MAX_NODES:
        return f"{name} must list {least} to {MAX_NODES} nodes"
    for x in v:
        bad = _node(name, x)
        if bad:
            return bad
    if len(set(v)) != len(v):
        return f"{name} lists a node twice"
    return None


def ring_id(rid: object, name: str = "ring_id") -> str | None:
    """``ring_id``: a sequence number and the representative's id."""
    if type(rid) is not RingId:
        return f"{name} is not a ring id"
    seq, rep = rid.seq, rid.rep
    if type(seq) is int and 0 <= seq <= MAX_SEQ and type(rep) is str and rep in _VALID_IDS:
        return None  # the common case, checked inline: a valid seq, a known representative
    return _seq(f"{name}.seq", seq) or _node(f"{name}.rep", rep)


def _chunk(c: object) -> str | None:
    if type(c) is not Chunk:
        return "chunk is not a Chunk"
    msg_id, frag, frags = c.msg_id, c.frag, c.frags
    if not isinstance(msg_id, str) or not 0 < len(msg_id) <= 255:
        return "chunk msg_id empty or too long"
    if type(c.payload) is not bytes:
        return "chunk payload is not bytes"
    if type(frags) is not int or not 1 <= frags <= MAX_FRAGS:
        return f"chunk frags {frags!r} out of range"
    if type(frag) is not int or not 0 <= frag < frags:
        return f"chunk frag {frag!r} not below frags {frags}"
    return None


def frame(m: object, *, my_aru: int | None, window_size: int) -> str | None:
    """A regular frame (``Mcast``); ``my_aru`` is the receiver's in the frame's ring (None
    for a ring it has no log of: the frame is only a foreign message then)."""
    if type(m) is not Mcast:
        return "not a regular frame"
    rid, seq, sender = m.ring_id, m.seq, m.sender
    # The common case first, checked inline: a ring id of a valid seq and a representative
    # whose id was found valid before, a valid seq and a sender whose id was found valid
    # before; else the checks in full, naming the first problem.
    if not (
        type(rid) is RingId
        and type(rid.seq) is int
        and 0 <= rid.seq <= MAX_SEQ
        and type(rid.rep) is str
        and rid.rep in _VALID_IDS
        and type(seq) is int
        and 0 <= seq <= MAX_SEQ
        and type(sender) is str
        and sender in _VALID_IDS
    ):
        bad = ring_id(rid) or _seq("seq", seq) or _node("sender", sender)
        if bad:
            return bad
    if seq < 1:
        return "seq 0 is not a frame's"
    # ahead(window_size), written out: this runs for every frame received
    if my_aru is not None and seq > my_aru + AHEAD_WINDOWS * window_size + MAX_NODES:
        return f"seq {seq} too far above my_aru {my_aru}"
    if type(m.safe) is not bool:
        return "safe is not a bool"
    chunks = m.chunks
    if type(chunks) is not tuple or not 1 <= len(chunks) <= MAX_CHUNKS:
        return f"chunks must number 1 to {MAX_CHUNKS}"
    if len(chunks) == 1:  # the common case: _chunk's checks of the one chunk, inline
        c = chunks[0]
        if type(c) is Chunk:
            msg_id, frag, frags = c.msg_id, c.frag, c.frags
            if (
                type(msg_id) is str
                and 0 < len(msg_id) <= 255
                and type(c.payload) is bytes
                and type(frags) is int
                and 1 <= frags <= MAX_FRAGS
                and type(frag) is int
                and 0 <= frag < frags
            ):
                return None
    for c in chunks:
        bad = _chunk(c)
        if bad:
            return bad
    if len(chunks) > 1:
        if any(c.frags != 1 for c in chunks):
            return "a fragment shares its frame"
        if len({c.msg_id for c in chunks}) != len(chunks):
            return "chunks repeat a msg_id"
    return None


def recovery_frame(m: object, *, my_aru: int | None, window_size: int) -> str | None:
    """A ``RecoveryMcast``: a frame of the new ring wrapping an old ring's frame."""
    if type(m) is not RecoveryMcast:
        return "not a recovery frame"
    bad = ring_id(m.ring_id) or _seq("seq", m.seq) or _node("sender", m.sender)
    if bad:
        return bad
    if m.seq < 1:
        return "seq 0 is not a frame's"
    if my_aru is not None and m.seq > my_aru + ahead(window_size):
        return f"seq {m.seq} too far above my_aru {my_aru}"
    old = m.old
    # the old ring's frame: its seq is not bounded by this ring's my_aru
    bad = frame(old, my_aru=None, window_size=0)
    return f"old: {bad}" if bad else None


def token(
    t: object, *, my_aru: int | None, window_size: int, members: tuple[str, ...] | None = None
) -> str | None:
    """The regular token (the Totem paper, "Token Fields"). ``members``: the ring's members when
    the token is of this node's ring; its ``aru_id`` and ``retrans_id`` must then be one of
    them or empty (a non-member there is never reset by anyone: the aru, and with it
    safe delivery and flow control, or the end of recovery would wait for ever)."""
    if type(t) is not Token:
        return "not a token"
    rid, token_seq, seq, aru, rec_seq = t.ring_id, t.token_seq, t.seq, t.aru, t.rec_seq
    aru_id, retrans_id = t.aru_id, t.retrans_id
    # The common case first, checked inline: a ring id as a frame's, valid seqs, and node
    # ids empty or found valid before; else the checks in full, naming the first problem.
    if not (
        type(rid) is RingId
        and type(rid.seq) is int
        and 0 <= rid.seq <= MAX_SEQ
        and type(rid.rep) is str
        and rid.rep in _VALID_IDS
        and type(token_seq) is int
        and 0 <= token_seq <= MAX_SEQ
        and type(seq) is int
        and 0 <= seq <= MAX_SEQ
        and type(aru) is int
        and 0 <= aru <= MAX_SEQ
        and type(rec_seq) is int
        and 0 <= rec_seq <= MAX_SEQ
        and type(aru_id) is str
        and (aru_id == "" or aru_id in _VALID_IDS)
        and type(retrans_id) is str
        and (retrans_id == "" or retrans_id in _VALID_IDS)
    ):
        bad = (
            ring_id(rid)
            or _seq("token_seq", token_seq)
            or _seq("seq", seq)
            or _seq("aru", aru)
            or _seq("rec_seq", rec_seq)
            or _node("aru_id", aru_id, empty_ok=True)
            or _node("retrans_id", retrans_id, empty_ok=True)
        )
        if bad:
            return bad
    if aru > seq:
        return f"aru {aru} above seq {seq}"
    if rec_seq > seq:
        return f"rec_seq {rec_seq} above seq {seq}"
    if my_aru is not None and seq > my_aru + ahead(window_size):
        return f"seq {seq} too far above my_aru {my_aru}"
    retrans_flg = t.retrans_flg
    if type(retrans_flg) is not bool:
        return "retrans_flg is not a bool"
    # Set together and cleared together by the member that names itself; a null aru_id
    # means every member had every frame (aru = seq). Otherwise nobody would ever reset
    # them: the aru (safe delivery, flow control) or the end of Recovery would wait for
    # ever (the garble soak).
    if retrans_flg != (retrans_id != ""):
        return "retrans_flg and retrans_id disagree"
    if not aru_id and aru != seq:
        return f"null aru_id with aru {aru} below seq {seq}"
    if members is not None:
        if aru_id and aru_id not in members:
            return f"aru_id {aru_id!r} is not a member of the ring"
        if retrans_id and retrans_id not in members:
            return f"retrans_id {retrans_id!r} is not a member of the ring"
    fcc, backlog = t.fcc, t.backlog
    if type(fcc) is not int or not 0 <= fcc <= MAX_COUNT:
        return f"fcc {fcc!r} out of range"
    if type(backlog) is not int or not 0 <= backlog <= MAX_COUNT:
        return f"backlog {backlog!r} out of range"
    rtr = t.rtr
    if type(rtr) is not tuple or len(rtr) > RTR_MAX:
        return f"rtr longer than {RTR_MAX}"
    for s in rtr:
        if type(s) is not int or not 1 <= s <= seq:
            return f"rtr entry {s!r} not in [1, seq]"
    if len(rtr) > 1 and len(set(rtr)) != len(rtr):
        return "rtr repeats a seq"
    return None


def join(j: object, src: str) -> str | None:
    """A join message (the Totem paper, "Gather State"): its sender is the node it came from."""
    if type(j) is not Join:
        return "not a join"
    bad = (
        _node("sender", j.sender)
        or _seq("ring_seq", j.ring_seq)
        or _nodes("proc_set", j.proc_set, least=1)
        or _nodes("fail_set", j.fail_set)
    )
    if bad:
        return bad
    if j.sender != src:
        return f"sender {j.sender!r} is not the source {src!r}"
    if j.sender not in j.proc_set:
        return "sender not in its proc_set"
    if not set(j.fail_set) <= set(j.proc_set):
        return "fail_set not within proc_set"
    return None


def memb_entry(e: object) -> str | None:
    """One member's entry on the commit token (the corosync Totem slides, "Commit")."""
    if type(e) is not MembEntry:
        return "entry is not a MembEntry"
    bad = (
        _node("entry node", e.node)
        or ring_id(e.ring_id, "entry ring_id")
        or _seq("my_aru", e.my_aru)
        or _seq("high_delivered", e.high_delivered)
        or _seq("high_seq", e.high_seq)
    )
    if bad:
        return bad
    if not e.high_delivered <= e.my_aru <= e.high_seq:
        return (
            f"entry of {e.node}: needs high_delivered <= my_aru <= high_seq, "
            f"got {e.high_delivered}, {e.my_aru}, {e.high_seq}"
        )
    if type(e.received_flg) is not bool:
        return "received_flg is not a bool"
    return _nodes("deliver_memb", e.deliver_memb)


def commit_token(ct: object) -> str | None:
    """The commit token (the Totem paper, "Commit State")."""
    if type(ct) is not CommitToken:
        return "not a commit token"
    bad = (
        ring_id(ct.ring_id)
        or _seq("token_seq", ct.token_seq)
        or _nodes("memb_list", ct.memb_list, least=1)
    )
    if bad:
        return bad
    memb = ct.memb_list
    if type(ct.memb_index) is not int or not 0 <= ct.memb_index < len(memb):
        return f"memb_index {ct.memb_index!r} outside memb_list"
    entries = ct.entries
    if type(entries) is not tuple or not 1 <= len(entries) <= len(memb):
        return "entries must number 1 to len(memb_list)"
    for i, e in enumerate(entries):
        bad = memb_entry(e)
        if bad:
            return bad
        if e.node != memb[i]:  # type: ignore[union-attr]
            return f"entry {i} is {e.node!r}, memb_list has {memb[i]!r}"  # type: ignore[union-attr]
    return None


def merge_detect(m: object, src: str) -> str | None:
    """A merge-detect message: a ring id and its representative."""
    if type(m) is not MergeDetect:
        return "not a merge-detect message"
    return ring_id(m.ring_id) or _node("sender", m.sender)


def token_ack(a: object) -> str | None:
    """An answer to a retransmitted token: a ring id and a token_seq."""
    if type(a) is not TokenAck:
        return "not a token ack"
    return ring_id(a.ring_id) or _seq("token_seq", a.token_seq)


def second_rotation(ct: CommitToken, accepted: CommitToken) -> str | None:
    """A full commit token at a member in Commit: it must carry, unchanged, the entries the
    member saw when it accepted the token (its own last), so the member's old ring has an
    entry and the recovery plan reads what the members really sent."""
    n = len(accepted.entries)
    if ct.memb_list != accepted.memb_list or ct.entries[:n] != accepted.entries:
        return "entries differ from the first rotation's"
    return None


def source(src: object) -> str | None:
    """The node a message came from, as the host reports it."""
    if type(src) is str and src in _VALID_IDS:
        return None
    return _node("source", src)
