"""Property checks over a simulated GMS run's trace; each returns its violations."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

Row = dict[str, Any]


def last_views(rows: list[Row]) -> dict[str, tuple[str, tuple[str, ...]]]:
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for r in rows:
        if r["kind"] == "view":
            out[r["node"]] = (r["view"], tuple(r["members"]))
        elif r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart", "join"):
            out.pop(r["node"], None)
    return out


def view_agreement(rows: list[Row]) -> list[str]:
    seen: dict[str, tuple[str, tuple[str, ...]]] = {}
    bad = []
    for r in rows:
        if r["kind"] != "view":
            continue
        members = tuple(r["members"])
        first = seen.setdefault(r["view"], (r["node"], members))
        if first[1] != members:
            bad.append(f"{r['view']}: {first[0]} has {first[1]}, {r['node']} has {members}")
    return bad


def leader_agreement(rows: list[Row]) -> list[str]:
    leaders: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r["kind"] == "leader":
            leaders[r["view"]].add(r["detail"]["leader"])
    return [f"{v}: leaders {sorted(ls)}" for v, ls in leaders.items() if len(ls) > 1]


def integrity(rows: list[Row]) -> list[str]:
    submitted = {r["msg"] for r in rows if r["kind"] == "submit"}
    seen: set[tuple[str, str]] = set()
    bad = []
    for r in rows:
        if r["kind"] != "deliver":
            continue
        key = (r["node"], r["msg"])
        if key in seen:
            bad.append(f"{r['node']} delivered {r['msg']} twice")
        if r["msg"] not in submitted:
            bad.append(f"{r['node']} delivered {r['msg']}, never submitted")
        seen.add(key)
    return bad


def fifo(rows: list[Row]) -> list[str]:
    last: dict[tuple[str, str], int] = {}
    bad = []
    for r in rows:
        if r["kind"] != "deliver":
            continue
        sender, _, counter = r["msg"].rpartition(":")
        key = (r["node"], sender)
        if int(counter) <= last.get(key, 0):
            bad.append(f"{r['node']} delivered {r['msg']} after {sender}:{last[key]}")
        last[key] = int(counter)
    return bad


def convergence(rows: list[Row], live: set[str]) -> list[str]:
    """Every live node's last view is one same view whose members are the live nodes."""
    last = last_views(rows)
    views = {n: last.get(n) for n in sorted(live)}
    distinct = set(views.values())
    if len(distinct) != 1:
        return [f"live nodes end in different views: {views}"]
    (view,) = distinct
    if view is None or set(view[1]) != live:
        return [f"final view {view} is not the live set {sorted(live)}"]
    return []


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


def invariants(rows: list[Row]) -> list[str]:
    return [f"{r['node']}: {r['detail']}" for r in rows if r["kind"] == "invariant"]


def safety(rows: list[Row]) -> list[str]:
    return [
        *invariants(rows),
        *view_agreement(rows),
        *leader_agreement(rows),
        *integrity(rows),
        *fifo(rows),
    ]


def records(rows: list[Row], kind: str, node: str | None = None) -> list[Row]:
    return [r for r in rows if r["kind"] == kind and (node is None or r["node"] == node)]


DOWN = ("crash", "leave", "pause")
LIFE = ("crash", "restart", "join", "leave", "pause", "resume")
RESETS = ("crash", "restart", "join", "leave")
HEAL_GRACE = 250_000_000  # ns: ringcast.lab.checks.merge_atomicity.HEAL_GRACE


def merge_atomicity(rows: list[Row]) -> list[str]:
    """The reference of the lab's ``merge_atomicity`` (``ringcast.lab.checks``), in
    plain Python over one run's rows.

    A *merge view* is a regular view that adds members to every view its installers
    came from (each installer's regular view just before it, since its last crash,
    restart, join or leave), two or more of them: a view inside one of those is an
    exclusion from it, whatever some installers missed on the way. It fails when:

    * partial: just before the view's first installation (the earliest ``t``), the
      network is whole (no partition, or the last one healed) and a node outside the
      view is alive (its last crash/restart/join/leave/pause/resume, if any, was not
      a crash, leave or pause) and in one of the views being merged;
    * partial after a heal: the same, the network whole by a heal at ``th`` at least
      ``HEAL_GRACE`` before and the view taking members of two or more sides of the
      healed partition, for a node outside
      the view that was on another side than the first installer, has been alive since
      the heal (no life action since) and is in a view (any: a subgroup the merge did
      not take at all);
    * overlapping: two merge views draw on one same earlier view and share members,
      neither member set containing the other.
    """
    members: dict[str, tuple[str, ...]] = {}
    sources: dict[str, set[str]] = defaultdict(set)
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
        cur[n] = v
        views[n].append((t, v))
        first[v] = min(first.get(v, (t, n)), (t, n))

    def before(seq: list[tuple[Any, ...]], t: int) -> Any:
        return next((x[1] for x in reversed(seq) if x[0] < t), None)

    def last_life(m: str, t: int) -> int | None:
        return next((tx for tx, _ in reversed(life[m]) if tx < t), None)

    def adds(v: str, p: str) -> bool:
        return not set(members[v]) <= set(members.get(p, ()))

    merges = {
        v
        for v, src in sources.items()
        if sum(adds(v, p) for p in src) >= 2 and all(adds(v, p) for p in src)
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
                bad.append(
                    f"partial merge: {n} installed {v} {list(members[v])} at {tf / 1e6:.1f} ms "
                    f"without {m}, alive and still in {p}, which it merges"
                )
                continue
            lt = last_life(m, tf)
            if (
                healed is not None
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
            if sources[a] & sources[b] and ma & mb and not ma <= mb and not mb <= ma:
                bad.append(
                    f"overlapping merges: {a} {sorted(ma)} and {b} {sorted(mb)} both merge "
                    f"{'+'.join(sorted(sources[a] & sources[b]))}"
                )
    return bad
