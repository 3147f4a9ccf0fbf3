"""The lab's claims for ``tribes``, checked in plain Python over one run's trace rows
(the lab checks the same over sweeps on Spark)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

Row = dict[str, Any]


def view_agreement(rows: list[Row]) -> list[str]:
    views: dict[str, tuple[str, ...]] = {}
    bad = []
    for r in rows:
        if r["kind"] == "view":
            key = tuple(r["members"])
            if views.setdefault(r["view"], key) != key:
                bad.append(f"view {r['view']}: {views[r['view']]} vs {key} at {r['node']}")
    return bad


def integrity(rows: list[Row]) -> list[str]:
    """Delivered only if submitted, with its size; once per node incarnation."""
    sent = {r["msg"]: r["size"] for r in rows if r["kind"] == "submit"}
    bad = []
    seen: dict[str, set[str]] = defaultdict(set)
    for r in sorted(rows, key=lambda r: (r["t"], r["i"])):
        if r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart"):
            seen[r["node"]].clear()
        if r["kind"] != "deliver":
            continue
        m, n = r["msg"], r["node"]
        if sent.get(m) != r["size"]:
            bad.append(f"{n} delivered {m}, not sent so")
        if m in seen[n]:
            bad.append(f"{n} delivered {m} twice")
        seen[n].add(m)
    return bad


def fifo(rows: list[Row]) -> list[str]:
    bad = []
    last: dict[tuple[str, str], int] = {}
    for r in sorted(rows, key=lambda r: (r["t"], r["i"])):
        if r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart"):
            last = {k: v for k, v in last.items() if k[0] != r["node"]}
        if r["kind"] != "deliver":
            continue
        sender, counter = r["msg"].rsplit(":", 1)
        key, c = (r["node"], sender), int(counter)
        if c <= last.get(key, 0):
            bad.append(f"{r['node']} delivered {r['msg']} after {sender}:{last[key]}")
        last[key] = c
    return bad


def leader_agreement(rows: list[Row]) -> list[str]:
    leaders: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r["kind"] == "leader":
            leaders[r["view"]].add(r["detail"]["leader"])
    return [f"view {v}: leaders {sorted(ls)}" for v, ls in leaders.items() if len(ls) > 1]


def live_components(rows: list[Row]) -> list[set[str]]:
    """The live nodes at the end, split by the last partition (unless healed)."""
    live = {r["node"] for r in rows if r["kind"] == "stats" and r["detail"]["state"] == "up"}
    groups: list[list[str]] | None = None
    for r in rows:
        if r["kind"] == "fault" and r["detail"].get("action") == "partition":
            groups = r["detail"]["groups"]
        elif r["kind"] == "fault" and r["detail"].get("action") == "heal":
            groups = None
    if groups is None:
        return [live]
    comps = [set(g) & live for g in groups]
    rest = live - set().union(*map(set, groups))
    return [c for c in [*comps, rest] if c]


def convergence(rows: list[Row]) -> list[str]:
    """Every live node's last view is the same, of exactly its live component."""
    last: dict[str, tuple[str, tuple[str, ...]]] = {}
    for r in sorted(rows, key=lambda r: (r["t"], r["i"])):
        if r["kind"] == "view":
            last[r["node"]] = (r["view"], tuple(sorted(r["members"])))
        elif r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart", "join"):
            last.pop(r["node"], None)
    bad = []
    for comp in live_components(rows):
        finals = {last.get(n) for n in comp}
        if len(finals) != 1 or None in finals:
            bad.append(f"component {sorted(comp)} ends in {finals}")
        elif next(iter(finals))[1] != tuple(sorted(comp)):  # type: ignore[index]
            bad.append(f"component {sorted(comp)} ends in view {finals}")
    return bad


EXPECTED_DROPS = (
    "stale token",
    "of a concluded election",
    "stale COORD_CONF",
    "does not list",
    "to an earlier incarnation",
    "for_an_earlier_incarnation",
)
"""Drops a fault can cause legitimately: a late copy of a restarted or concluded
election's token, a late view, a view of this node's previous incarnation, an
application message sent to it, any frame the reliable layer was given for it."""


def protocol_rows(rows: list[Row]) -> list[str]:
    """No transition outside the table; no drop but the expected late ones."""
    return [
        f"{r['node']} {r['kind']}: {r['detail']}"
        for r in rows
        if r["kind"] == "invariant"
        or (
            r["kind"] == "drop"
            and not any(x in str(r["detail"].get("reason", "")) for x in EXPECTED_DROPS)
        )
    ]


def check_all(rows: list[Row]) -> list[str]:
    return [
        *view_agreement(rows),
        *leader_agreement(rows),
        *integrity(rows),
        *fifo(rows),
        *convergence(rows),
        *protocol_rows(rows),
    ]
