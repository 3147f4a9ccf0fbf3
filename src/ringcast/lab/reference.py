"""The lab's properties in plain Python over one run's trace rows, for every family.

The lab checks sweeps on Spark (:mod:`ringcast.lab.checks`); this module checks one run
in memory, as the protocols' tests, soaks and benches need, and holds the definitions
they share in one place (the liveness ones are in :mod:`ringcast.lab.liveness`). Rows
are the simulator's (:meth:`ringcast.sim.result.SimResult.events`: dicts, ``detail``
parsed), in the order recorded. Each check returns its violations as text, an empty
list when the property holds.

Where the families' traces differ, a keyword says how: a family whose nodes forget
what they delivered when they restart (``per_incarnation``), one whose views carry a
transitional flag, one that converges on members rather than view ids (Raincore's
``globalView`` indices), one whose live components come from the trace itself (Tribes).
The family bundles at the end (:func:`safety`, :func:`totem_check_all`,
:func:`tribes_check_all`) are what each family's tests assert empty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]

__all__ = [
    "EXPECTED_DROPS",
    "HEAL_GRACE",
    "by_node",
    "convergence",
    "delivery_stalls",
    "fence_regressions",
    "fenced_mutual_exclusion",
    "fifo",
    "global_view_vectors",
    "integrity",
    "invariants",
    "last_views",
    "leader_agreement",
    "live_components",
    "lock_holds",
    "merge_atomicity",
    "mutual_exclusion",
    "protocol_rows",
    "records",
    "safe_delivery",
    "safety",
    "settled_at",
    "single_token",
    "total_order",
    "totem_check_all",
    "tribes_check_all",
    "unsettled_spans",
    "view_agreement",
    "virtual_synchrony",
]

DOWN = ("crash", "leave", "pause")
LIFE = ("crash", "restart", "join", "leave", "pause", "resume")
RESETS = ("crash", "restart", "join", "leave")
HEAL_GRACE = 250_000_000  # ns: ringcast.lab.checks.merge_atomicity.HEAL_GRACE


# ---------------------------------------------------------------- rows


def records(rows: list[Row], kind: str, node: str | None = None) -> list[Row]:
    """The rows of one ``kind`` (and one ``node``), in order."""
    return [r for r in rows if r["kind"] == kind and (node is None or r["node"] == node)]


def by_node(rows: list[Row]) -> dict[str, list[Row]]:
    """Each node's rows in its order (``t``, then ``i``)."""
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[r["node"]].append(r)
    for lst in out.values():
        lst.sort(key=lambda r: (r["t"], r["i"]))
    return out


def _action(r: Row) -> Any:
    return r["detail"].get("action") if r["kind"] == "fault" else None


def last_views(rows: list[Row]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each node's current view at the end (id, members); a crash, restart or join
    clears it."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for r in rows:
        if r["kind"] == "view":
            out[r["node"]] = (r["view"], tuple(r["members"]))
        elif _action(r) in ("crash", "restart", "join"):
            out.pop(r["node"], None)
    return out


def global_view_vectors(rows: list[Row]) -> dict[str, dict[int, tuple[str, ...]]]:
    """Raincore: each node's committed globalView entries (index -> members), from its
    view events."""
    out: dict[str, dict[int, tuple[str, ...]]] = defaultdict(dict)
    for r in rows:
        if r["kind"] == "view":
            out[r["node"]][int(r["view"])] = tuple(r["members"])
    return dict(out)


def invariants(rows: list[Row]) -> list[str]:
    """The ``invariant`` rows: a machine that found its own state impossible."""
    return [f"{r['node']}: {r['detail']}" for r in rows if r["kind"] == "invariant"]


# ---------------------------------------------------------------- safety


def view_agreement(rows: list[Row]) -> list[str]:
    """Every installation of one view (or of one globalView index) has the same members
    and, where views carry it, the same transitional flag."""
    seen: dict[str, tuple[str, tuple[str, ...], Any]] = {}
    bad = []
    for r in rows:
        if r["kind"] != "view":
            continue
        members, transitional = tuple(r["members"]), r.get("transitional")
        first = seen.setdefault(r["view"], (r["node"], members, transitional))
        if first[1:] != (members, transitional):
            bad.append(
                f"view {r['view']}: {first[0]} has {first[1]}"
                f"{' (transitional)' if first[2] else ''}, {r['node']} has {members}"
                f"{' (transitional)' if transitional else ''}"
            )
    return bad


def leader_agreement(rows: list[Row]) -> list[str]:
    """One leader a view."""
    leaders: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r["kind"] == "leader":
            leaders[r["view"]].add(r["detail"]["leader"])
    return [f"view {v}: leaders {sorted(ls)}" for v, ls in leaders.items() if len(ls) > 1]


def integrity(rows: list[Row], *, per_incarnation: bool = False) -> list[str]:
    """A message is delivered only if submitted, with the size it was submitted with,
    and at most once at a node (``per_incarnation``: once in each of its lives, for a
    family whose nodes start afresh when they restart)."""
    sent = {r["msg"]: r.get("size") for r in rows if r["kind"] == "submit"}
    seen: dict[str, set[str]] = defaultdict(set)
    bad = []
    for r in rows:
        if per_incarnation and _action(r) in ("crash", "restart"):
            seen[r["node"]].clear()
        if r["kind"] != "deliver":
            continue
        m, n = r["msg"], r["node"]
        if m not in sent:
            bad.append(f"{n} delivered {m}, never submitted")
        elif sent[m] is not None and r.get("size") is not None and sent[m] != r["size"]:
            bad.append(f"{n} delivered {m} with {r['size']} bytes, submitted {sent[m]}")
        if m in seen[n]:
            bad.append(f"{n} delivered {m} twice")
        seen[n].add(m)
    return bad


def fifo(rows: list[Row], *, per_incarnation: bool = False) -> list[str]:
    """A node delivers each sender's messages in the order sent (``per_incarnation``:
    counted afresh in each of the receiver's lives)."""
    last: dict[tuple[str, str], int] = {}
    bad = []
    for r in rows:
        if per_incarnation and _action(r) in ("crash", "restart"):
            last = {k: v for k, v in last.items() if k[0] != r["node"]}
        if r["kind"] != "deliver":
            continue
        sender, _, counter = r["msg"].rpartition(":")
        key, c = (r["node"], sender), int(counter)
        if c <= last.get(key, 0):
            bad.append(f"{r['node']} delivered {r['msg']} after {sender}:{last[key]}")
        last[key] = c
    return bad


def total_order(rows: list[Row]) -> list[str]:
    """Every two nodes deliver the messages both delivered in the same order; a message
    is delivered at most once at a node and only if submitted."""
    bad: list[str] = []
    submitted = {r["msg"] for r in rows if r["kind"] == "submit"}
    seqs: dict[str, list[str]] = {}
    for node, lst in by_node(rows).items():
        seq = [r["msg"] for r in lst if r["kind"] == "deliver"]
        if len(set(seq)) != len(seq):
            dup = sorted({m for m in seq if seq.count(m) > 1})[:3]
            bad.append(f"{node} delivered {dup} more than once")
        bad.extend(f"{node} delivered {m} that nobody sent" for m in seq if m not in submitted)
        seqs[node] = seq
    nodes = sorted(seqs)
    for i, a in enumerate(nodes):
        in_a = set(seqs[a])
        for b in nodes[i + 1 :]:
            common = in_a & set(seqs[b])
            sa = [m for m in seqs[a] if m in common]
            sb = [m for m in seqs[b] if m in common]
            if sa != sb:
                k = next(j for j, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y)
                bad.append(f"{a} and {b} disagree on the order at {sa[k]} / {sb[k]}")
    return bad


def _transitions(rows: list[Row]) -> dict[tuple[str, str], dict[str, frozenset[str]]]:
    """(view, next view) -> node -> messages it delivered in ``view`` before ``next``."""
    out: dict[tuple[str, str], dict[str, frozenset[str]]] = defaultdict(dict)
    for n, lst in by_node(rows).items():
        cur: str | None = None
        got: set[str] = set()
        for r in lst:
            k = r["kind"]
            if _action(r) in ("crash", "restart", "join"):
                cur, got = None, set()
            elif k == "deliver" and cur is not None:
                got.add(r["msg"])
            elif k == "view":
                if cur is not None:
                    out[(cur, r["view"])][n] = frozenset(got)
                cur, got = r["view"], set()
    return out


def virtual_synchrony(rows: list[Row]) -> list[str]:
    """Nodes that move from one view to the same next view delivered the same messages
    in the first."""
    bad = []
    for (v, w), per_node in _transitions(rows).items():
        if len(set(per_node.values())) > 1:
            bad.append(f"{v} -> {w}: nodes delivered different messages: {sorted(per_node)}")
    return bad


def safe_delivery(rows: list[Row], grace: int | None = None) -> list[str]:
    """Totem: a message delivered safe in configuration C is delivered by every member
    of C that does not fail (deliveries within ``grace`` of the run's end are not judged).

    ``grace`` is by default the longer of 150 ms and ``token_per_member`` for every node
    in the trace: the token timeout in force, which bounds a rotation, once the ring is
    larger than the default timeout covers. A member that has not delivered a message
    within one rotation of the run's end may simply be on its way.

    A member has failed if it crashes at any time after the last view it installed (or
    its last boot) before C was first installed: it took part in forming C (C's members
    are those of its commit token) and then crashed, possibly before installing C.
    Extended virtual synchrony excuses failed members."""
    if grace is None:
        from ringcast.protocols.totem import SETTINGS

        nodes = {r["node"] for r in rows if r["node"]}
        grace = max(150_000_000, SETTINGS["token_per_member"].default * len(nodes))
    crashes: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        if _action(r) == "crash":
            crashes[r["node"]].append(r["t"])
    end = max((r["t"] for r in rows), default=0) - grace
    alive_marks: dict[str, list[int]] = defaultdict(list)  # installs and restarts, per node
    for r in rows:
        if r["kind"] == "view" or _action(r) == "restart":
            alive_marks[r["node"]].append(r["t"])
    delivered: dict[str, set[str]] = defaultdict(set)
    members: dict[str, tuple[str, ...]] = {}
    first_install: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "deliver":
            delivered[r["node"]].add(r["msg"])
        elif r["kind"] == "view":
            members[r["view"]] = tuple(r["members"])
            first_install[r["view"]] = min(first_install.get(r["view"], r["t"]), r["t"])
    bad = []
    for n, lst in by_node(rows).items():
        cur = None
        for r in lst:
            if r["kind"] == "view":
                cur = r["view"]
            elif _action(r) in ("crash", "restart"):
                cur = None
            elif r["kind"] == "deliver" and r["order"] == "safe" and cur and r["t"] < end:
                for q in members[cur]:
                    if r["msg"] in delivered[q]:
                        continue
                    since = max((t for t in alive_marks[q] if t < first_install[cur]), default=0)
                    if any(t >= since for t in crashes.get(q, ())):
                        continue
                    bad.append(f"{n} delivered {r['msg']} safe in {cur}; member {q} never did")
    return bad


# ---------------------------------------------------------------- the token and the lock


def intervals(
    rows: list[Row], start: Callable[[Row], bool], end: Callable[[Row], bool], end_t: int
) -> dict[str, list[tuple[int, int]]]:
    """Per node, the intervals between a row matching ``start`` and one matching ``end``
    (a crash or leave of the node also ends one; an open one ends at ``end_t``)."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for node, lst in by_node(rows).items():
        opened: int | None = None
        for r in lst:
            crash = _action(r) in ("crash", "leave")
            if opened is None and start(r):
                opened = r["t"]
            elif opened is not None and (end(r) or crash):
                out[node].append((opened, r["t"]))
                opened = None
        if opened is not None:
            out[node].append((opened, end_t))
    return dict(out)


def overlaps(ivs: dict[str, list[tuple[int, int]]]) -> list[tuple[str, str, int, int]]:
    """Pairs of intervals of different nodes that overlap for a positive time."""
    flat = sorted((a, b, n) for n, lst in ivs.items() for a, b in lst)
    bad = []
    for i, (_a1, b1, n1) in enumerate(flat):
        for a2, b2, n2 in flat[i + 1 :]:
            if a2 >= b1:
                break
            if n1 != n2 and min(b1, b2) > a2:
                bad.append((n1, n2, a2, min(b1, b2)))
    return bad


def _eating_start(r: Row) -> bool:
    return r["kind"] == "state" and r["detail"].get("token_state") == "eating"


def _eating_end(r: Row) -> bool:
    if r["kind"] == "token" and r["detail"].get("op") == "sent":
        return True
    return r["kind"] == "state" and r["detail"].get("token_state") == "starving"


def single_token(rows: list[Row], end_t: int, excluded: list[tuple[int, int]]) -> list[str]:
    """Raincore: at most one Eating node at any instant outside the ``excluded``
    token-loss periods."""
    ivs = intervals(rows, _eating_start, _eating_end, end_t)
    out = []
    for n1, n2, a, b in overlaps(ivs):
        if not any(lo <= a and b <= hi for lo, hi in excluded):
            out.append(f"{n1} and {n2} both eating in [{a}, {b}]")
    return out


def _lock(op: str) -> Callable[[Row], bool]:
    return lambda r: r["kind"] == "lock" and r["detail"].get("op") == op


def mutual_exclusion(rows: list[Row], end_t: int) -> list[str]:
    """No two nodes hold the lock at once."""
    ivs = intervals(rows, _lock("granted"), _lock("released"), end_t)
    return [f"{a} and {b} both hold the lock in [{s}, {e}]" for a, b, s, e in overlaps(ivs)]


def lock_holds(rows: list[Row], end_t: int) -> list[tuple[str, int, int, int]]:
    """Every lock hold: (node, granted at, released at, fence of the grant); a crash or
    leave of the holder ends its hold, an open one ends at ``end_t``."""
    out: list[tuple[str, int, int, int]] = []
    for node, lst in by_node(rows).items():
        opened: tuple[int, int] | None = None
        for r in lst:
            crash = _action(r) in ("crash", "leave")
            if r["kind"] == "lock" and r["detail"].get("op") == "granted" and opened is None:
                opened = (r["t"], int(r["detail"].get("fence", 0)))
            elif opened is not None and (crash or _lock("released")(r)):
                out.append((node, opened[0], r["t"], opened[1]))
                opened = None
        if opened is not None:
            out.append((node, opened[0], end_t, opened[1]))
    return out


def fenced_mutual_exclusion(rows: list[Row], end_t: int) -> list[str]:
    """Mutual exclusion as a fencing token gives it (Chubby's sequencers): every grant
    carries a fence no other grant carries, and two holders that overlap in time hold
    different fences, so a resource that accepts only the largest fence it has seen
    serves one of them; overlap with equal (or missing: 0) fences is a violation."""
    holds = lock_holds(rows, end_t)
    bad: list[str] = []
    seen: dict[int, tuple[str, int]] = {}
    for node, a, _b, fence in sorted(holds, key=lambda h: h[1]):
        if fence in seen and fence != 0:
            bad.append(f"fence {fence} granted twice: {seen[fence]} and {(node, a)}")
        seen.setdefault(fence, (node, a))
    for i, (n1, a1, b1, f1) in enumerate(holds):
        for n2, a2, b2, f2 in holds[i + 1 :]:
            if n1 != n2 and min(b1, b2) > max(a1, a2) and (f1 == f2 or 0 in (f1, f2)):
                lo, hi = max(a1, a2), min(b1, b2)
                bad.append(f"{n1} and {n2} both hold the lock, fences {f1}, {f2}, in [{lo}, {hi}]")
    return bad


def fence_regressions(rows: list[Row]) -> list[str]:
    """Grants whose fence is below one granted earlier in the run (a resource that saw
    the larger one refuses them): the documented limit, counted, not a violation."""
    bad: list[str] = []
    top = (0, "", 0)
    for r in sorted(rows, key=lambda r: (r["t"], r["i"])):
        if r["kind"] == "lock" and r["detail"].get("op") == "granted":
            f = int(r["detail"].get("fence", 0))
            if f < top[0]:
                bad.append(f"{r['node']} granted fence {f} at {r['t']} after {top[1]}'s {top[0]}")
            if f > top[0]:
                top = (f, r["node"], r["t"])
    return bad


# ---------------------------------------------------------------- convergence


def live_components(rows: list[Row]) -> list[set[str]]:
    """The nodes up at the end (their ``stats`` rows), split by the last partition
    unless a heal came after it."""
    live = {r["node"] for r in rows if r["kind"] == "stats" and r["detail"]["state"] == "up"}
    groups: list[list[str]] | None = None
    for r in rows:
        if _action(r) == "partition":
            groups = r["detail"]["groups"]
        elif _action(r) == "heal":
            groups = None
    if groups is None:
        return [live]
    comps = [set(g) & live for g in groups]
    rest = live - set().union(*map(set, groups))
    return [c for c in [*comps, rest] if c]


def convergence(
    rows: list[Row],
    live: set[str] | None = None,
    *,
    on_members: bool = False,
    keep_across_restart: bool = False,
) -> list[str]:
    """Every live node's last regular view is one same view (the same id and members;
    ``on_members``: the same members) whose members are exactly the live nodes.

    ``live`` None: the live components of the trace (:func:`live_components`), each to
    end in one view of exactly itself. A node's crash, restart or join clears its view
    unless ``keep_across_restart`` (the family's view outlives a restart: Raincore's
    committed globalView, Totem's ring until the next one).
    """
    last: dict[str, tuple[Any, tuple[str, ...]]] = {}
    for r in sorted(rows, key=lambda r: (r["t"], r["i"])):
        if r["kind"] == "view" and not r.get("transitional"):
            last[r["node"]] = (None if on_members else r["view"], tuple(sorted(r["members"])))
        elif not keep_across_restart and _action(r) in ("crash", "restart", "join"):
            last.pop(r["node"], None)
    bad = []
    for comp in live_components(rows) if live is None else [set(live)]:
        views = {n: last.get(n) for n in sorted(comp)}
        distinct = set(views.values())
        if len(distinct) != 1:
            bad.append(f"live nodes {sorted(comp)} end in different views: {views}")
            continue
        (view,) = distinct
        if view is None or set(view[1]) != comp:
            bad.append(f"final view {view} is not the live set {sorted(comp)}")
    return bad


def settled_at(rows: list[Row], live: set[str], since: int, end_t: int) -> int | None:
    """Raincore: the first time at or after ``since`` at which every live node is in
    Agreement on the same globalView entry holding exactly the live nodes (None: not
    before ``end_t``)."""
    t = since
    for a, b in unsettled_spans(rows, live, end_t):
        if a <= t < b:
            t = b
    return t if t < end_t else None


def unsettled_spans(rows: list[Row], live: set[str], end_t: int) -> list[tuple[int, int]]:
    """Raincore: the periods during which the live nodes did not share one view of
    exactly themselves (see :func:`settled_at`), in order; the last may run to
    ``end_t``."""
    last: dict[str, tuple[int, frozenset[str]]] = {}
    target = frozenset(live)
    spans: list[tuple[int, int]] = []
    start: int | None = 0

    def settled() -> bool:
        views = {last.get(n) for n in live}
        return len(views) == 1 and None not in views and last[min(live)][1] == target

    for r in sorted(
        (r for r in rows if r["kind"] in ("view", "state")), key=lambda r: (r["t"], r["i"])
    ):
        if r["kind"] == "view":
            last[r["node"]] = (int(r["view"]), frozenset(r["members"]))
        elif r["node"] in live and r["detail"].get("view_state") != "agreement":
            # a node leaving Agreement starts an unsettled period
            last[r["node"]] = (-1, frozenset())
        now = settled()
        if now and start is not None:
            spans.append((start, r["t"]))
            start = None
        elif not now and start is None:
            start = r["t"]
    if start is not None:
        spans.append((start, end_t))
    return spans


def delivery_stalls(rows: list[Row], live: set[str], since: int) -> list[str]:
    """Every live node delivered some message of every live node from ``since`` (ns) on:
    a group that converged but stopped delivering (a ring whose token goes round with
    nobody allowed to send, a sender's stream stuck at one member) fails this."""
    heard = {
        (r["node"], r["msg"].rpartition(":")[0])
        for r in rows
        if r["kind"] == "deliver" and r["t"] >= since
    }
    return [
        f"{n} delivered nothing of {s} after {since / 1e9:.2f} s"
        for n in sorted(live)
        for s in sorted(live)
        if (n, s) not in heard
    ]


# ---------------------------------------------------------------- merges


def merge_atomicity(rows: list[Row]) -> list[str]:
    """The reference of the lab's ``merge_atomicity`` (``ringcast.lab.checks``), in
    plain Python over one run's rows.

    A *merge view* is a regular view that adds members to every view its installers
    came from (each installer's regular view just before it, since its last crash,
    restart, join or leave), two or more of them not behind another: a view inside
    one of those is an exclusion from it, whatever some installers missed on the way.
    A source is behind another when it is inside it, or when the other's creator (the
    node its id names) installed it before the other, no reset between, and every node
    that came from it is a member of the other: one subgroup before and after a view
    change some installers missed (a view admitting a joiner after it is a join, not a
    merge); a node left out of the other that comes back from it is a subgroup of its
    own. It fails when:

    * partial: just before the view's first installation (the earliest ``t``), the
      network is whole (no partition, or the last one healed) and a node outside the
      view is alive (its last crash/restart/join/leave/pause/resume, if any, was not
      a crash, leave or pause, nor a resume less than ``HEAL_GRACE`` before) and in
      one of the views being merged, unless the heal that made it whole came less
      than ``HEAL_GRACE`` before (the merge may have been decided before the heal);
    * partial after a heal: the same, the network whole by a heal at ``th`` at least
      ``HEAL_GRACE`` before and the view taking members of two or more sides of the
      healed partition, for a node outside
      the view that was on another side than the first installer, has been alive since
      the heal (no life action since) and is in a view (any: a subgroup the merge did
      not take at all);
    * overlapping: two merge views draw on one same earlier view and share members,
      neither member set containing the other, nor coming before the other in the
      lineage of the other's creator (a later merge of the same lineage that takes a
      node the first left behind, paused, is a merge of its own, not a concurrent one).
    """
    members: dict[str, tuple[str, ...]] = {}
    sources: dict[str, set[str]] = defaultdict(set)
    came: dict[tuple[str, str], set[str]] = defaultdict(set)  # (view, source): installers
    first: dict[str, tuple[int, str]] = {}
    # per node, in event order: (t, view or None: a reset) and (t, life action)
    views: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    life: dict[str, list[tuple[int, str]]] = defaultdict(list)
    cuts: list[tuple[int, str, Any]] = []
    cur: dict[str, str] = {}
    for r in sorted(rows, key=lambda r: (r["node"], r["i"])):
        n, t = r["node"], r["t"]
        if r["kind"] == "fault":
            action = r["detail"].get("action")
            if action in ("partition", "heal"):
                cuts.append((t, action, r["detail"].get("groups")))
            if action in LIFE:
                life[n].append((t, action))
            if action in RESETS:
                cur.pop(n, None)
                views[n].append((t, None))
            continue
        if r["kind"] != "view" or r.get("transitional"):
            continue
        v = r["view"]
        ms = tuple(sorted(r["members"]))
        members[v] = min(members.get(v, ms), ms)
        prev = cur.get(n)
        if prev is not None and prev != v:
            sources[v].add(prev)
            came[v, prev].add(n)
        cur[n] = v
        views[n].append((t, v))
        first[v] = min(first.get(v, (t, n)), (t, n))

    def before(seq: list[tuple[Any, ...]], t: int) -> Any:
        return next((x[1] for x in reversed(seq) if x[0] < t), None)

    def last_life(m: str, t: int) -> int | None:
        return next((tx for tx, _ in reversed(life[m]) if tx < t), None)

    def adds(v: str, p: str) -> bool:
        return not set(members[v]) <= set(members.get(p, ()))

    def ancestor(p: str, o: str) -> bool:
        """``p`` came before ``o`` in the lineage of ``o``'s creator (the node its id
        names): that node installed ``p``, then ``o``, with no reset between."""
        creator = o.partition(":")[0]
        seen = False
        for _, x in views.get(creator, ()):
            if x is None:
                seen = False
            elif x == p:
                seen = True
            elif x == o and seen:
                return True
        return False

    def behind(v: str, p: str, o: str) -> bool:
        """Source ``p`` of ``v`` is source ``o``'s subgroup before a view change some
        installers missed: inside ``o``, or an ancestor of ``o`` whose installers of
        ``v`` are all members of ``o`` (a node left out of ``o`` that comes back from
        ``p`` is a subgroup of its own: a merge)."""
        if set(members.get(p, ())) < set(members.get(o, ())):
            return True
        return ancestor(p, o) and came[v, p] <= set(members.get(o, ()))

    def subgroups(v: str, src: set[str]) -> int:
        """The sources that are not behind another one."""
        return sum(1 for p in src if not any(o != p and behind(v, p, o) for o in src))

    merges = {
        v
        for v, src in sources.items()
        if sum(adds(v, p) for p in src) >= 2
        and all(adds(v, p) for p in src)
        and subgroups(v, src) >= 2
    }
    cuts = sorted({(t, c): (t, c, g) for t, c, g in cuts}.values(), key=lambda x: x[:2])
    bad = []
    for v in sorted(merges):
        tf, n = first[v]
        k = next((k for k in range(len(cuts) - 1, -1, -1) if cuts[k][0] < tf), None)
        if k is not None and cuts[k][1] == "partition":
            continue
        # the partition this merge's network healed from (a heal at th), if any
        th = cuts[k][0] if k is not None else None
        healed = next((g for _, c, g in reversed(cuts[: k or 0]) if c == "partition"), None)

        def side(x: str, healed: Any = healed) -> int:
            return next((j + 1 for j, g in enumerate(healed or ()) if x in g), 0)

        for m in sorted(views):
            if m in members[v] or before(life[m], tf) in DOWN:
                continue
            p = before(views[m], tf)
            if p is None:
                continue
            if p in sources[v]:
                lt = last_life(m, tf)
                if before(life[m], tf) == "resume" and lt is not None and tf - lt < HEAL_GRACE:
                    continue  # resumed after the merge was decided without it
                if th is not None and tf - th < HEAL_GRACE:
                    continue  # healed after the merge was decided without it
                bad.append(
                    f"partial merge: {n} installed {v} {list(members[v])} at {tf / 1e6:.1f} ms "
                    f"without {m}, alive and still in {p}, which it merges"
                )
                continue
            lt = last_life(m, tf)
            if (
                healed is not None
                and th is not None
                and tf - th >= HEAL_GRACE
                and len({side(x) for x in members[v]}) >= 2
                and side(m) != side(n)
                and (lt is None or lt < th)
            ):
                bad.append(
                    f"partial merge after the heal at {th / 1e6:.1f} ms: {n} installed {v} "
                    f"{list(members[v])} without {m}, from another side, alive since and in {p}"
                )
    ordered = sorted(merges)
    for k, a in enumerate(ordered):
        for b in ordered[k + 1 :]:
            ma, mb = set(members[a]), set(members[b])
            if (
                sources[a] & sources[b]
                and ma & mb
                and not ma <= mb
                and not mb <= ma
                and not ancestor(a, b)
                and not ancestor(b, a)
            ):
                bad.append(
                    f"overlapping merges: {a} {sorted(ma)} and {b} {sorted(mb)} both merge "
                    f"{'+'.join(sorted(sources[a] & sources[b]))}"
                )
    return bad


# ---------------------------------------------------------------- protocol rows


EXPECTED_DROPS = (
    "stale token",
    "of a concluded election",
    "stale COORD_CONF",
    "does not list",
    "to an earlier incarnation",
    "for_an_earlier_incarnation",
)
"""Tribes: drops a fault can cause legitimately: a late copy of a restarted or concluded
election's token, a late view, a view of this node's previous incarnation, an
application message sent to it, any frame the reliable layer was given for it."""


def protocol_rows(rows: list[Row], expected_drops: tuple[str, ...] = EXPECTED_DROPS) -> list[str]:
    """No transition outside the table; no drop but the expected late ones."""
    return [
        f"{r['node']} {r['kind']}: {r['detail']}"
        for r in rows
        if r["kind"] == "invariant"
        or (
            r["kind"] == "drop"
            and not any(x in str(r["detail"].get("reason", "")) for x in expected_drops)
        )
    ]


# ---------------------------------------------------------------- the families' bundles


def safety(rows: list[Row]) -> list[str]:
    """The safety every family claims: no invariant row, view and leader agreement,
    integrity and FIFO."""
    return [
        *invariants(rows),
        *view_agreement(rows),
        *leader_agreement(rows),
        *integrity(rows),
        *fifo(rows),
    ]


def totem_check_all(rows: list[Row], live: set[str]) -> list[str]:
    """Totem's claims: integrity, total order, FIFO, view agreement, virtual synchrony,
    safe delivery, and every live node ending in one ring of exactly the live nodes."""
    return [
        *integrity(rows),
        *total_order(rows),
        *fifo(rows),
        *view_agreement(rows),
        *virtual_synchrony(rows),
        *safe_delivery(rows),
        *convergence(rows, live, keep_across_restart=True),
    ]


def tribes_check_all(rows: list[Row]) -> list[str]:
    """Tribes' claims: view and leader agreement, integrity and FIFO in each of a node's
    lives, each live component ending in one view of itself, and no unexpected drop."""
    return [
        *view_agreement(rows),
        *leader_agreement(rows),
        *integrity(rows, per_incarnation=True),
        *fifo(rows, per_incarnation=True),
        *convergence(rows),
        *protocol_rows(rows),
    ]
