"""Property checks over a simulated Raincore run's trace; each returns its violations."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

Row = dict[str, Any]


def by_node(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[r["node"]].append(r)
    for lst in out.values():
        lst.sort(key=lambda r: (r["t"], r["i"]))
    return out


def global_view_vectors(rows: list[Row]) -> dict[str, dict[int, tuple[str, ...]]]:
    """Each node's committed globalView entries (index -> members), from its view events."""
    out: dict[str, dict[int, tuple[str, ...]]] = defaultdict(dict)
    for r in rows:
        if r["kind"] == "view":
            out[r["node"]][int(r["view"])] = tuple(r["members"])
    return dict(out)


def view_agreement(rows: list[Row]) -> list[str]:
    """Any two nodes agree at every index both committed; no node commits an index twice
    with different members."""
    bad: list[str] = []
    seen: dict[int, tuple[str, tuple[str, ...]]] = {}
    mine: dict[tuple[str, int], tuple[str, ...]] = {}
    for r in rows:
        if r["kind"] != "view":
            continue
        idx, members = int(r["view"]), tuple(r["members"])
        prev = mine.setdefault((r["node"], idx), members)
        if prev != members:
            bad.append(f"{r['node']} committed index {idx} as {prev} and {members}")
        first = seen.setdefault(idx, (r["node"], members))
        if first[1] != members:
            bad.append(f"index {idx}: {first[0]} has {first[1]}, {r['node']} has {members}")
    return bad


def intervals(rows: list[Row], start: Any, end: Any, end_t: int) -> dict[str, list[tuple]]:
    """Per node, the intervals between an event matching ``start`` and one matching ``end``
    (a crash of the node also ends one; an open one ends at ``end_t``)."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for node, lst in by_node(rows).items():
        opened: int | None = None
        for r in lst:
            crash = r["kind"] == "fault" and r["detail"].get("action") in ("crash", "leave")
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
    """At most one Eating node at any instant outside the ``excluded`` token-loss periods."""
    ivs = intervals(rows, _eating_start, _eating_end, end_t)
    out = []
    for n1, n2, a, b in overlaps(ivs):
        if not any(lo <= a and b <= hi for lo, hi in excluded):
            out.append(f"{n1} and {n2} both eating in [{a}, {b}]")
    return out


def _lock(op: str) -> Any:
    return lambda r: r["kind"] == "lock" and r["detail"].get("op") == op


def mutual_exclusion(rows: list[Row], end_t: int) -> list[str]:
    ivs = intervals(rows, _lock("granted"), _lock("released"), end_t)
    return [f"{a} and {b} both hold the lock in [{s}, {e}]" for a, b, s, e in overlaps(ivs)]


def lock_holds(rows: list[Row], end_t: int) -> list[tuple[str, int, int, int]]:
    """Every lock hold: (node, granted at, released at, fence of the grant); a crash or
    leave of the holder ends its hold, an open one ends at ``end_t``."""
    out: list[tuple[str, int, int, int]] = []
    for node, lst in by_node(rows).items():
        opened: tuple[int, int] | None = None
        for r in lst:
            crash = r["kind"] == "fault" and r["detail"].get("action") in ("crash", "leave")
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


def total_order(rows: list[Row]) -> list[str]:
    """Token messages: delivered at most once per node, only if submitted, and in the same
    relative order at every pair of nodes."""
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
        for b in nodes[i + 1 :]:
            common = set(seqs[a]) & set(seqs[b])
            sa = [m for m in seqs[a] if m in common]
            sb = [m for m in seqs[b] if m in common]
            if sa != sb:
                k = next(j for j, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y)
                bad.append(f"{a} and {b} disagree on the order at {sa[k]} / {sb[k]}")
    return bad


def convergence(rows: list[Row], live: set[str]) -> list[str]:
    """Every live node's last committed view is the same, and holds exactly the live nodes."""
    last: dict[str, tuple[int, tuple[str, ...]]] = {}
    for node, lst in by_node(rows).items():
        for r in lst:
            if r["kind"] == "view":
                last[node] = (int(r["view"]), tuple(r["members"]))
    views = {n: last.get(n) for n in sorted(live)}
    distinct = {v[1] if v else None for v in views.values()}
    if len(distinct) != 1:
        return [f"live nodes end in different views: {views}"]
    (view,) = distinct
    if view is None or set(view) != live:
        return [f"final view {view} is not the live set {sorted(live)}"]
    return []


def settled_at(rows: list[Row], live: set[str], since: int, end_t: int) -> int | None:
    """The first time at or after ``since`` at which every live node is in Agreement on
    the same globalView entry holding exactly the live nodes (None: not before
    ``end_t``)."""
    t = since
    for a, b in unsettled_spans(rows, live, end_t):
        if a <= t < b:
            t = b
    return t if t < end_t else None


def unsettled_spans(rows: list[Row], live: set[str], end_t: int) -> list[tuple[int, int]]:
    """The periods during which the live nodes did not share one view of exactly
    themselves (see :func:`settled_at`), in order; the last may run to ``end_t``."""
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


def invariants(rows: list[Row]) -> list[str]:
    return [f"{r['node']}: {r['detail']}" for r in rows if r["kind"] == "invariant"]
