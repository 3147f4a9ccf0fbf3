"""Safety and liveness checks over a simulated run's trace (one function per property).

Each returns a list of violations (empty when the property holds).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ringcast.protocols.totem import SETTINGS

Row = dict[str, Any]


def _by_node(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[r["node"]].append(r)
    for lst in out.values():
        lst.sort(key=lambda r: (r["t"], r["i"]))
    return out


def _crashes(rows: list[Row]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        if r["kind"] == "fault" and r["detail"].get("action") == "crash":
            out[r["node"]].append(r["t"])
    return out


def integrity(rows: list[Row]) -> list[str]:
    sent = {r["msg"]: r["size"] for r in rows if r["kind"] == "submit"}
    bad = []
    seen: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r["kind"] != "deliver":
            continue
        m, n = r["msg"], r["node"]
        if m not in sent:
            bad.append(f"{n} delivered {m}, never sent")
        elif sent[m] != r["size"]:
            bad.append(f"{n} delivered {m} with {r['size']} bytes, sent {sent[m]}")
        if m in seen[n]:
            bad.append(f"{n} delivered {m} twice")
        seen[n].add(m)
    return bad


def total_order(rows: list[Row]) -> list[str]:
    seqs = {
        n: [r["msg"] for r in lst if r["kind"] == "deliver"] for n, lst in _by_node(rows).items()
    }
    bad = []
    nodes = sorted(seqs)
    for i, a in enumerate(nodes):
        pos_a = {m: k for k, m in enumerate(seqs[a])}
        for b in nodes[i + 1 :]:
            common = [m for m in seqs[b] if m in pos_a]
            order = [pos_a[m] for m in common]
            if order != sorted(order):
                bad.append(f"{a} and {b} deliver common messages in different orders")
    return bad


def fifo(rows: list[Row]) -> list[str]:
    bad = []
    for n, lst in _by_node(rows).items():
        last: dict[str, int] = {}
        for r in lst:
            if r["kind"] != "deliver":
                continue
            sender, counter = r["msg"].rsplit(":", 1)
            c = int(counter)
            if c <= last.get(sender, 0):
                bad.append(f"{n} delivered {r['msg']} after {sender}:{last[sender]}")
            last[sender] = c
    return bad


def view_agreement(rows: list[Row]) -> list[str]:
    views: dict[str, tuple] = {}
    bad = []
    for r in rows:
        if r["kind"] != "view":
            continue
        key = (tuple(r["members"]), r["transitional"])
        if views.setdefault(r["view"], key) != key:
            bad.append(f"view {r['view']}: {views[r['view']]} vs {key} at {r['node']}")
    return bad


def _transitions(rows: list[Row]) -> dict[tuple[str, str], dict[str, frozenset[str]]]:
    """(view, next view) -> node -> messages it delivered in ``view`` before ``next``."""
    out: dict[tuple[str, str], dict[str, frozenset[str]]] = defaultdict(dict)
    for n, lst in _by_node(rows).items():
        cur: str | None = None
        got: set[str] = set()
        for r in lst:
            k = r["kind"]
            if k == "fault" and r["detail"].get("action") in ("crash", "restart", "join"):
                cur, got = None, set()
            elif k == "deliver" and cur is not None:
                got.add(r["msg"])
            elif k == "view":
                if cur is not None:
                    out[(cur, r["view"])][n] = frozenset(got)
                cur, got = r["view"], set()
    return out


def virtual_synchrony(rows: list[Row]) -> list[str]:
    bad = []
    for (v, w), per_node in _transitions(rows).items():
        sets = set(per_node.values())
        if len(sets) > 1:
            bad.append(f"{v} -> {w}: nodes delivered different messages: {sorted(per_node)}")
    return bad


def safe_delivery(rows: list[Row], grace: int | None = None) -> list[str]:
    """A message delivered safe in configuration C is delivered by every member of C that
    does not fail (deliveries within ``grace`` of the run's end are not judged).

    ``grace`` is by default the longer of 150 ms and ``token_per_member`` for every node
    in the trace: the token timeout in force, which bounds a rotation, once the ring is
    larger than the default timeout covers. A member that has not delivered a message
    within one rotation of the run's end may simply be on its way; with a fixed 150 ms,
    rings of 32 at 30 % loss were flagged for deliveries 160-174 ms before the end.

    A member has failed if it crashes at any time after the last view it installed (or
    its last boot) before C was first installed: it took part in forming C (C's members
    are those of its commit token) and then crashed, possibly before installing C. Extended
    virtual synchrony excuses failed members; only crashes after C's first install used to
    be excused, which flagged a member that crashed in Recovery a moment before the others
    installed C (soak seed 446)."""
    if grace is None:
        nodes = {r["node"] for r in rows if r["node"]}
        grace = max(150_000_000, SETTINGS["token_per_member"].default * len(nodes))
    crashes = _crashes(rows)
    end = max((r["t"] for r in rows), default=0) - grace
    alive_marks: dict[str, list[int]] = defaultdict(list)  # installs and restarts, per node
    for r in rows:
        restart = r["kind"] == "fault" and r["detail"].get("action") == "restart"
        if r["kind"] == "view" or restart:
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
    for n, lst in _by_node(rows).items():
        cur = None
        for r in lst:
            if r["kind"] == "view":
                cur = r["view"]
            elif r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart"):
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


def convergence(rows: list[Row], live: set[str], after: int) -> list[str]:
    """Every live node ends in one regular view of exactly the live nodes, and stays
    Operational from ``after`` (the last fault plus a settling bound) to the end."""
    last: dict[str, Row] = {}
    for n, lst in _by_node(rows).items():
        for r in lst:
            if r["kind"] == "view" and not r["transitional"]:
                last[n] = r
    bad = []
    final = {last[n]["view"] if n in last else None for n in live}
    if len(final) != 1:
        bad.append(
            f"live nodes end in different views: { {n: last.get(n, {}).get('view') for n in live} }"
        )
    for n in live:
        r = last.get(n)
        if r is None or set(r["members"]) != live:
            bad.append(f"{n} ends in {r and r['view']} {r and r['members']}, live: {sorted(live)}")
    return bad


def check_all(rows: list[Row], live: set[str], last_fault: int) -> list[str]:
    return (
        integrity(rows)
        + total_order(rows)
        + fifo(rows)
        + view_agreement(rows)
        + virtual_synchrony(rows)
        + safe_delivery(rows)
        + convergence(rows, live, last_fault)
    )
