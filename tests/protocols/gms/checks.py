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
