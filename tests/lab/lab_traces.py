"""Small synthetic traces for the lab's tests, built row by row, and their corruptions.

:func:`clean_trace` gives one run of three nodes A, B, C in which every property
holds: configuration v1 = ABC, C crashes, A and B go through a transitional
configuration v2t to v2 = AB, C restarts and all install v3 = ABC; agreed and safe
multicasts in each configuration, two lock holds, token states, leader rows and
final stats. Each ``mutate_*`` function corrupts it in one way and returns what the
counterexample must point at.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ringcast.trace.schema import COLUMNS, SCHEMA

Row = dict[str, Any]
NODES = ("A", "B", "C")
MS = 1_000_000


def _row(run: str, node: str, t: int, kind: str, **kw: Any) -> Row:
    detail = kw.pop("detail", None)
    row: Row = dict.fromkeys(COLUMNS)
    row.update(run=run, node=node, t=t, kind=kind, **kw)
    row["detail"] = json.dumps(detail, sort_keys=True) if detail else None
    return row


def _phase(
    run: str,
    rows: list[Row],
    rng: random.Random,
    senders: tuple[str, ...],
    receivers: tuple[str, ...],
    t0: int,
    count: int,
    counters: dict[str, int],
) -> None:
    """``count`` multicasts from random ``senders``, delivered in one order by all."""
    for k in range(count):
        s = rng.choice(senders)
        counters[s] += 1
        msg = f"{s}:{counters[s]}"
        order = "safe" if k % 3 == 2 else "agreed"
        ts = t0 + k * 2 * MS
        rows.append(_row(run, s, ts, "submit", msg=msg, order=order, size=10))
        for r in receivers:
            rows.append(
                _row(
                    run,
                    r,
                    ts + MS + rng.randrange(MS // 2),
                    "deliver",
                    msg=msg,
                    order=order,
                    size=10,
                    detail={"sender": s},
                )
            )


DETECTION_TIMEOUT = 100 * MS
"""The failure-detection timeout the synthetic runs record (convergence's bound: 1 s)."""


def clean_trace(run: str = "r1", seed: int = 7) -> list[Row]:
    """One run where every property holds (see the module docstring)."""
    rng = random.Random(seed)
    rows: list[Row] = []
    counters = dict.fromkeys(NODES, 0)
    abc = list(NODES)
    for n in NODES:
        rows.append(_row(run, n, 0, "view", view="v1", members=abc, transitional=False))
        rows.append(_row(run, n, 1 * MS, "leader", view="v1", detail={"leader": "A"}))
    for k, n in enumerate(NODES):  # token: Eating in turn, never two at once
        rows.append(_row(run, n, (2 + 4 * k) * MS, "state", detail={"token_state": "Eating"}))
        rows.append(_row(run, n, (4 + 4 * k) * MS, "state", detail={"token_state": "Hungry"}))
    for n, (a, b) in {"A": (20, 30), "B": (40, 50)}.items():
        rows.append(_row(run, n, a * MS, "lock", detail={"op": "requested"}))
        rows.append(_row(run, n, a * MS + 1, "lock", detail={"op": "granted"}))
        rows.append(_row(run, n, b * MS, "lock", detail={"op": "released", "reason": "done"}))
    _phase(run, rows, rng, NODES, NODES, 60 * MS, 12, counters)
    rows.append(_row(run, "C", 200 * MS, "fault", detail={"action": "crash"}))
    for n in ("A", "B"):
        rows.append(
            _row(run, n, 250 * MS, "view", view="v2t", members=["A", "B"], transitional=True)
        )
        rows.append(
            _row(run, n, 260 * MS, "view", view="v2", members=["A", "B"], transitional=False)
        )
    _phase(run, rows, rng, ("A", "B"), ("A", "B"), 300 * MS, 6, counters)
    rows.append(_row(run, "C", 400 * MS, "fault", detail={"action": "restart"}))
    for n in NODES:
        rows.append(_row(run, n, 450 * MS, "view", view="v3", members=abc, transitional=False))
        rows.append(_row(run, n, 451 * MS, "leader", view="v3", detail={"leader": "A"}))
    _phase(run, rows, rng, NODES, NODES, 500 * MS, 9, counters)
    for n in NODES:
        rows.append(
            _row(
                run,
                n,
                2000 * MS,
                "stats",
                detail={
                    "sent": 10,
                    "sent_bytes": 100,
                    "received": 10,
                    "state": "up",
                    "detection_timeout": DETECTION_TIMEOUT,
                },
            )
        )
    return renumber(rows)


def renumber(rows: list[Row]) -> list[Row]:
    """Sort by (run, node, t) keeping list order for ties, and set ``i`` per node."""
    out = sorted(rows, key=lambda r: (r["run"], r["node"], r["t"]))
    index: dict[tuple[str, str], int] = {}
    for r in out:
        key = (r["run"], r["node"])
        r["i"] = index.get(key, 0)
        index[key] = r["i"] + 1
    return out


def to_table(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows], schema=SCHEMA)


def _delivers(rows: list[Row], node: str, lo: int = 0, hi: int = 10**12) -> list[Row]:
    return [r for r in rows if r["kind"] == "deliver" and r["node"] == node and lo <= r["t"] < hi]


# ------------------------------------------------------------------ corruptions
# Each returns the corrupted rows and what the counterexample must name.

Mutation = Callable[[list[Row]], tuple[list[Row], dict[str, Any]]]


def swap_deliveries(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B delivers two consecutive messages of different senders the other way round."""
    ds = _delivers(rows, "B", 0, 200 * MS)
    k = next(
        k
        for k in range(len(ds) - 1)
        if ds[k]["msg"].split(":")[0] != ds[k + 1]["msg"].split(":")[0]
    )
    a, b = ds[k], ds[k + 1]
    for f in ("msg", "order", "detail"):
        a[f], b[f] = b[f], a[f]
    return rows, {"nodes": {"B"}, "msgs": {a["msg"], b["msg"]}}


def drop_delivery(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B never delivers one agreed message of configuration v1 (another node's: B
    missing one of its own would also stall its delivery_progress)."""
    victim = next(
        r
        for r in _delivers(rows, "B", 0, 200 * MS)
        if r["order"] == "agreed" and not r["msg"].startswith("B:")
    )
    rows = [r for r in rows if r is not victim]
    return renumber(rows), {"nodes": {"B"}, "msgs": {victim["msg"]}}


def duplicate_delivery(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """A delivers a message a second time."""
    victim = _delivers(rows, "A", 0, 200 * MS)[4]
    copy = dict(victim, t=victim["t"] + 1)
    pos = rows.index(victim)
    rows = [*rows[: pos + 1], copy, *rows[pos + 1 :]]
    return renumber(rows), {"nodes": {"A"}, "msgs": {victim["msg"]}}


def deliver_unsent(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """Every node delivers a message nobody submitted (last in v3, so order holds)."""
    for n in NODES:
        rows.append(
            _row(
                rows[0]["run"],
                n,
                900 * MS,
                "deliver",
                msg="Z:1",
                order="agreed",
                size=10,
                detail={"sender": "Z"},
            )
        )
    return renumber(rows), {"nodes": set(NODES), "msgs": {"Z:1"}}


def other_members(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B installs configuration v1 with members A, B instead of A, B, C."""
    v = next(r for r in rows if r["kind"] == "view" and r["node"] == "B" and r["view"] == "v1")
    v["members"] = ["A", "B"]
    return rows, {"nodes": {"B"}, "views": {"v1"}}


def overlapping_locks(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B is granted the lock while A still holds it."""
    g = next(
        r
        for r in rows
        if r["kind"] == "lock" and r["node"] == "B" and json.loads(r["detail"])["op"] == "granted"
    )
    g["t"] = 25 * MS
    req = next(r for r in rows if r["kind"] == "lock" and r["node"] == "B")
    req["t"] = 24 * MS
    return renumber(rows), {"nodes": {"A", "B"}, "times": {25 * MS}}


def break_virtual_synchrony(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B delivers the last message of v1 only after installing v2 (the others in v1)."""
    victim = _delivers(rows, "B", 0, 200 * MS)[-1]
    victim["t"] = 270 * MS
    return renumber(rows), {"nodes": {"B"}, "msgs": {victim["msg"]}}


def reorder_one_sender(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """Every node delivers two messages of one sender in the wrong order (same order at
    all nodes, so total order holds and only FIFO breaks)."""
    first = _delivers(rows, "A", 500 * MS)
    by_sender: dict[str, list[str]] = {}
    for r in first:
        by_sender.setdefault(r["msg"].split(":")[0], []).append(r["msg"])
    m1, m2 = next(v[:2] for v in by_sender.values() if len(v) >= 2)
    for n in NODES:
        a = next(r for r in _delivers(rows, n) if r["msg"] == m1)
        b = next(r for r in _delivers(rows, n) if r["msg"] == m2)
        for f in ("msg", "order"):
            a[f], b[f] = b[f], a[f]
    return rows, {"msgs": {m1, m2}}


def drop_safe_delivery(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B never delivers a safe message of the last configuration v3 (another node's)."""
    victim = next(
        r
        for r in _delivers(rows, "B", 500 * MS)
        if r["order"] == "safe" and not r["msg"].startswith("B:")
    )
    rows = [r for r in rows if r is not victim]
    return renumber(rows), {"nodes": {"B"}, "msgs": {victim["msg"]}}


def two_eaters(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """B starts Eating while A still is."""
    e = next(
        r for r in rows if r["kind"] == "state" and r["node"] == "B" and "Eating" in r["detail"]
    )
    e["t"] = 3 * MS
    return renumber(rows), {"nodes": {"A", "B"}}


def split_leader(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """C names B as the leader of v1."""
    r = next(r for r in rows if r["kind"] == "leader" and r["node"] == "C")
    r["detail"] = json.dumps({"leader": "B"})
    return rows, {"nodes": {"C"}, "views": {"v1"}}


def no_final_view(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """C restarts and never installs a configuration again."""
    rows = [r for r in rows if not (r["kind"] == "view" and r["node"] == "C" and r["view"] == "v3")]
    return renumber(rows), {"nodes": {"C"}}


def stalled_sender(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """A submits a message in v3 that nobody delivers, and the run goes on 2.5 s with
    A delivering nothing (the final stats rows move from 2 s to 3 s): beyond any bound
    up to 2 s."""
    run = rows[0]["run"]
    rows.append(_row(run, "A", 510 * MS, "submit", msg="A:100", order="agreed", size=10))
    for r in rows:
        if r["kind"] == "stats":
            r["t"] = 3000 * MS
    return renumber(rows), {"nodes": {"A"}, "msgs": {"A:100"}}


def partial_merge(rows: list[Row]) -> tuple[list[Row], dict[str, Any]]:
    """C, restarted, first forms vd = {C, D} with a fourth node D (no stats row, so not
    counted live by the liveness checks), then v3 merges v2 and vd without D, which is
    alive and still in vd: a merge that left part of a subgroup behind."""
    run = rows[0]["run"]
    for n in ("C", "D"):
        rows.append(
            _row(run, n, 420 * MS, "view", view="vd", members=["C", "D"], transitional=False)
        )
    return renumber(rows), {"nodes": {"D"}, "views": {"v3", "vd"}}


MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "swap": (swap_deliveries, "total_order"),
    "drop": (drop_delivery, "virtual_synchrony"),
    "duplicate": (duplicate_delivery, "integrity"),
    "unsent": (deliver_unsent, "integrity"),
    "members": (other_members, "view_agreement"),
    "locks": (overlapping_locks, "mutual_exclusion"),
    "vs_break": (break_virtual_synchrony, "virtual_synchrony"),
    "fifo": (reorder_one_sender, "fifo"),
    "safe": (drop_safe_delivery, "safe_delivery"),
    "token": (two_eaters, "single_token"),
    "leader": (split_leader, "leader_agreement"),
    "converge": (no_final_view, "convergence"),
    "stall": (stalled_sender, "delivery_progress"),
    "partial_merge": (partial_merge, "merge_atomicity"),
}
"""Corruption name -> (function, the one property it must break)."""
