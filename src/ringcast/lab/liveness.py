"""The liveness properties, convergence and delivery_progress, in plain Python.

The lab's checks (:mod:`ringcast.lab.checks.convergence`,
:mod:`ringcast.lab.checks.delivery_progress`) compute the same things with Spark over
many runs; this module is for one run in memory: the benches (``bench/liveness_hostile.py``
and the per-family ones) and the tests that hold the two to each other.

**convergence**, the one definition every family is held to.

A *component* is a set of nodes that can reach each other at the end of the run (the
groups of the last ``partition`` unless a ``heal`` came after it; else every node); its
*live* nodes are those alive at the end. The component is *settled* at an instant when
each of its live nodes has a current regular configuration (its last regular ``view``
since its last reset: crash, restart, join, leave) and they all have one same
configuration (the same id and members, or the same members where the protocol's
``converge_on`` says so) whose members are exactly the component's live nodes.

From the run's last fault ``tf`` (its start if it has none: forming the group counts)
to its end, every *unsettled period* of a component
must be shorter than the bound, ``bound`` failure-detection timeouts of the family
(its registration's ``timeout``, at the run's settings): the first one starts at
``tf`` (the time to settle), the later ones at a relapse (a false suspicion under the
loss that goes on after the last fault, and the re-formation that follows). A period
still open at the end of the run counts with its length so far, so a run whose end
comes less than a bound after its last fault is never judged late.

**delivery_progress**: a node alive at the end with messages of its own pending (submitted
since its last reset and not delivered since) goes at most ``progress_bound`` (1 s)
without a delivery at the end of the run, counted from the latest of its last delivery,
its first pending submit, the run's last fault, its last life fault and the install of
its final configuration.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RESETS = frozenset({"crash", "restart", "join", "leave"})
LIFE = RESETS | {"pause", "resume"}
DOWN = frozenset({"crash", "leave", "pause"})
PROGRESS_BOUND = 1_000_000_000
"""delivery_progress's bound (ns), the lab's default."""
DEFAULT_BOUND = 10.0
"""The bound, in failure-detection timeouts."""


def _detail(r: Mapping[str, Any]) -> Mapping[str, Any]:
    """A row's detail: a mapping in the simulator's rows, JSON text in a trace file's."""
    d = r.get("detail")
    if isinstance(d, str):
        d = json.loads(d)
    return d if isinstance(d, Mapping) else {}


@dataclass(frozen=True)
class Settling:
    """How one component settled after the last fault (times in ns)."""

    live: tuple[str, ...]
    first: int | None
    """From the last fault to the first instant it was settled (None: never)."""
    worst: int
    """The longest unsettled period from the last fault on (an open one: so far)."""
    worst_from: int
    """When that period began."""
    at_end: bool
    """Settled at the end of the run."""

    def converged(self, bound_ns: float) -> bool:
        return self.worst <= bound_ns


def settling(
    rows: Iterable[Mapping[str, Any]],
    live: Iterable[str],
    tf: int,
    end: int,
    *,
    on_members: bool = False,
) -> Settling:
    """The settling of the component whose live nodes are ``live``, from the last fault
    ``tf`` to the run's ``end``, over the run's trace ``rows`` in order."""
    nodes = frozenset(live)
    current: dict[str, tuple[Any, frozenset[str]]] = {}

    def settled() -> bool:
        if len(current) != len(nodes):
            return False
        configs = set(current.values())
        if len(configs) != 1:
            return False
        (config,) = configs
        return config[1] == nodes

    judged = False
    prev = False
    first: int | None = None
    start = tf
    worst = 0
    worst_from = tf
    for r in rows:
        node = r["node"]
        if node not in nodes:
            continue
        kind = r["kind"]
        if kind == "view":
            if r.get("transitional"):
                continue
            members = frozenset(r["members"])
            update: tuple[Any, frozenset[str]] | None = (
                None if on_members else r["view"],
                members,
            )
        elif kind == "fault" and _detail(r).get("action") in RESETS:
            update = None
        else:
            continue
        t = r["t"]
        if not judged and t >= tf:
            judged = True
            prev = settled()
            first = tf if prev else None
        if update is None:
            current.pop(node, None)
        else:
            current[node] = update
        if not judged:
            continue
        now = settled()
        if prev and not now:
            start = t
        elif now and not prev:
            if t - start > worst:
                worst, worst_from = t - start, start
            if first is None:
                first = t
        prev = now
    if not judged:
        prev = settled()
        first = tf if prev else None
    if not prev and end - start > worst:
        worst, worst_from = end - start, start
    return Settling(
        tuple(sorted(nodes)), None if first is None else first - tf, worst, worst_from, prev
    )


def components(rows: Iterable[Mapping[str, Any]], live: Iterable[str]) -> list[frozenset[str]]:
    """The live nodes of each component at the end of a run: the groups of its last
    ``partition`` fault (nodes in no group form one more) unless a ``heal`` followed."""
    groups: list[list[str]] = []
    for r in rows:
        if r["kind"] == "fault":
            detail = _detail(r)
            action = detail.get("action")
            if action == "heal":
                groups = []
            elif action == "partition":
                groups = detail.get("groups") or []
    alive = frozenset(live)
    comps: list[frozenset[str]] = []
    listed: set[str] = set()
    for g in groups:
        listed |= set(g)
        if c := alive & frozenset(g):
            comps.append(c)
    if rest := alive - listed:
        comps.append(rest)
    return comps


def convergence(
    rows: list[Mapping[str, Any]],
    live: Iterable[str],
    timeout_ns: int,
    *,
    bound: float = DEFAULT_BOUND,
    end: int | None = None,
    on_members: bool = False,
) -> list[str]:
    """The convergence violations of one run (empty: it holds): per component, an
    unsettled period from the last fault on longer than ``bound`` x ``timeout_ns``."""
    faults = [r["t"] for r in rows if r["kind"] == "fault"]
    tf = max(faults, default=0)
    end = max((r["t"] for r in rows), default=0) if end is None else end
    bad = []
    for comp in components(rows, live):
        st = settling(rows, comp, tf, end, on_members=on_members)
        if not st.converged(bound * timeout_ns):
            bad.append(
                f"{'+'.join(st.live)}: unsettled for {st.worst / 1e6:g} ms from "
                f"{st.worst_from / 1e6:g} ms (bound {bound:g} x {timeout_ns / 1e6:g} ms)"
            )
    return bad


def alive_at_end(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The nodes alive at the end: their ``stats`` row says ``up``; without stats rows,
    their last life fault is not a crash, leave or pause (the lab's ``node_ends``)."""
    stat: dict[str, str] = {}
    last: dict[str, str] = {}
    nodes: set[str] = set()
    for r in rows:
        nodes.add(r["node"])
        if r["kind"] == "stats":
            stat[r["node"]] = str(_detail(r).get("state"))
        elif r["kind"] == "fault" and (a := _detail(r).get("action")) in LIFE:
            last[r["node"]] = a
    if stat:
        return {n for n in nodes if stat.get(n) == "up"}
    return {n for n in nodes if last.get(n) not in DOWN}


def _sender(msg: str) -> str:
    return msg.rsplit(":", 1)[0] if ":" in msg else ""


def delivery_progress(
    rows: list[Mapping[str, Any]], *, bound: int = PROGRESS_BOUND, end: int | None = None
) -> list[str]:
    """The delivery_progress violations of one run (empty: it holds), one a node."""
    end = max((r["t"] for r in rows), default=0) if end is None else end
    tf = max((r["t"] for r in rows if r["kind"] == "fault"), default=0)
    live = alive_at_end(rows)
    pending: dict[str, dict[str, int]] = {n: {} for n in live}
    last_delivery: dict[str, int] = {}
    life_t: dict[str, int] = {}
    fin_t: dict[str, int] = {}
    for r in rows:
        n = r["node"]
        if n not in live:
            continue
        kind = r["kind"]
        if kind == "submit":
            pending[n][r["msg"]] = r["t"]
        elif kind == "deliver":
            last_delivery[n] = r["t"]
            pending[n].pop(r["msg"], None)
        elif kind == "view" and not r.get("transitional"):
            fin_t[n] = r["t"]
        elif kind == "fault" and (a := _detail(r).get("action")) in LIFE:
            life_t[n] = r["t"]
            if a in RESETS:
                pending[n].clear()
                last_delivery.pop(n, None)
                fin_t.pop(n, None)
    bad = []
    for n in sorted(live):
        mine = {m: t for m, t in pending[n].items() if _sender(m) == n}
        if not mine:
            continue
        since = max(
            last_delivery.get(n, 0), min(mine.values()), tf, life_t.get(n, 0), fin_t.get(n, 0)
        )
        if end - since > bound:
            bad.append(
                f"{n} has {len(mine)} message(s) of its own undelivered and delivered nothing "
                f"in the last {(end - since) / 1e6:g} ms of the run (last delivery at "
                f"{last_delivery[n] / 1e6 if n in last_delivery else 'never'} ms)"
            )
    return bad
