"""The screen: each run read once, in plain Python in the executors, to clear the runs on
which a property cannot be violated, so that the exact checks read only the others.

The exact checks (this package's property modules) are Spark SQL over all runs at once:
their cost is mostly fixed (planning, a few hundred stages), and on a sweep where every
run holds, all of it is spent proving nothing. The screen groups the trace by run
(``groupBy("run").applyInArrow``: one shuffle, one Python worker a run at a time, no row
through the driver) and answers, per run and property, one question: *may this run
violate it?* It is sound, never complete: where it says no, the exact check would have
found nothing; where it says yes, or is unsure, the run goes to the exact check, which
alone decides and gives the counterexamples. So verdicts and counterexamples are the
exact checks' own, with or without the screen (``tests/lab/test_reference.py`` runs
both on every bundled scenario and on corruptions of them).

What each screen computes, per run (``ringcast/lab/checks/<property>.py`` has the
definitions; the annotation of :mod:`ringcast.lab.checks.context` is recomputed per node
in event order ``i``):

* view_agreement, leader_agreement, integrity, fifo, virtual_synchrony, convergence and
  delivery_progress: the exact check's own computation, for one run;
* total_order: the run's precedence graph over *all* deliveries (an edge from each
  delivery of a node to its next) has no cycle, and no node delivered a message twice.
  Then one order of all the run's messages agrees with every node, and so with every
  subset of their deliveries: whatever the protocol's scope and orders, no two nodes
  disagree (Kahn's algorithm, linear in the deliveries);
* safe_delivery: every member of the configuration a safe message was delivered in
  delivered it safe somewhere in the run (the exact check excuses more);
* merge_atomicity: no configuration is installed from two or more others (the run has
  no merge, and every rule is about merges), or the plain-Python reference
  (:func:`ringcast.lab.reference.merge_atomicity`, held to the exact check clause by
  clause in ``tests/lab/test_merge_atomicity.py``) finds every merge whole;
* mutual_exclusion and single_token: no two hold intervals of different nodes overlap
  (in one configuration, for single_token), the intervals as the exact checks end them;
  a real cluster's judged crash is not used to end one (an interval lasts to the run's
  end instead) and fencing tokens are ignored: both only make more overlaps;

A run the screen does not read as it expects (two rows of a node with one ``i``, a
``detail`` that is not JSON, a ``groups`` list of other shape, a recorded timeout that is
no integer, a trace of the runtime whose nodes' ends are judged from where the trace
stops) is sent to the exact checks for every property.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ringcast.lab.checks._ends import LIFE_ACTIONS
from ringcast.lab.checks.context import (
    KINDS,
    RESET_ACTIONS,
    TOKEN,
    TOKEN_OPS,
    CheckContext,
    small_frame,
)
from ringcast.lab.checks.convergence import FALLBACK_TIMEOUT
from ringcast.lab.properties import converge_on, declares_kind, detection_timeout

COLUMNS = (
    "run", "protocol", "node", "t", "i", "kind", "msg", "order", "view", "members",
    "transitional", "detail",
)  # fmt: skip
"""The trace columns the screen reads."""
PARSED = frozenset({"fault", "stats", "lock", "state", "leader", TOKEN})
"""The kinds whose ``detail`` a screen reads."""


class Unsure(Exception):
    """The screen cannot vouch for this run: every property goes to the exact checks."""


@dataclass(frozen=True)
class Params:
    """What the screens need beside a run's rows (made on the driver, shipped once)."""

    convergence_bound: float
    progress_bound: int
    token: frozenset[str]
    """Protocols whose ``token`` rows (op sent/returned/dropped) end an Eating interval:
    those that declare the kind, as the annotation keeps them."""
    timeouts: Mapping[str, int]
    """Each protocol's default failure-detection timeout (ns)."""
    on_members: frozenset[str]
    """Protocols that converge on members, not on configuration ids."""
    ends: Mapping[str, int] = field(default_factory=dict)
    """Each run's last time over all its rows (the run inventory's ``tmax``), where the
    screen is given only the rows of the kinds it reads; a run not here ends at its
    last row."""


def params(
    ctx: CheckContext, protocols: Iterable[str], ends: Mapping[str, int] | None = None
) -> Params:
    protocols = sorted(set(protocols))
    return Params(
        convergence_bound=ctx.convergence_bound,
        progress_bound=ctx.progress_bound,
        token=frozenset(p for p in protocols if declares_kind(p, TOKEN)),
        timeouts={p: detection_timeout(p) or FALLBACK_TIMEOUT for p in protocols},
        on_members=frozenset(p for p in protocols if converge_on(p) == "members"),
        ends=dict(ends or {}),
    )


def _json_text(v: Any) -> str | None:
    """What Spark's ``get_json_object`` gives for a parsed value: a string as it is,
    null for null, other values as JSON text."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"))


def _get(d: Mapping[str, Any], key: str) -> str | None:
    return _json_text(d.get(key))


def _parse(text: str) -> dict[str, Any]:
    """A row's ``detail``: its JSON object (another JSON value reads as none)."""
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise Unsure("a detail that is not JSON") from e
    return parsed if isinstance(parsed, dict) else {}


def members_key(members: list[str | None] | None) -> str | None:
    """:func:`ringcast.lab.checks.context.members_key` for one list."""
    if members is None:
        return None
    return "\u0001".join(sorted(m for m in members if m is not None))


class Run:
    """One run's rows of the checked kinds, per node in event order, annotated as
    :class:`~ringcast.lab.checks.context.CheckContext` annotates them."""

    def __init__(self, table: pa.Table, params: Params, names: Iterable[str] = ()) -> None:
        import pyarrow.compute as pc

        protocols = pc.unique(table.column("protocol")).to_pylist()
        if len(protocols) != 1 or protocols[0] is None:
            raise Unsure("not one protocol")
        (self.protocol,) = protocols
        for c in ("node", "t", "i"):
            if table.column(c).null_count:
                raise Unsure(f"a null {c}")
        run = table.column("run")[0].as_py() if "run" in table.column_names else ""
        self.tmax: int = params.ends.get(run, pc.max(table.column("t")).as_py())
        self.params = params
        self._of_kind: dict[str, list[int]] | None = None
        self._ends: dict[str, _End] | None = None
        # the rows the annotation keeps: every checked kind; the token rows (few
        # enough to parse once their text names an op) only where single_token reads them
        kind = table.column("kind")
        keep = pc.is_in(kind, pa.array([k for k in KINDS if k != TOKEN]))
        if self.protocol in params.token and "single_token" in names:
            detail = table.column("detail")
            named = pc.or_(
                pc.or_(pc.match_substring(detail, "sent"), pc.match_substring(detail, "returned")),
                pc.match_substring(detail, "dropped"),
            )
            keep = pc.or_(keep, pc.and_(pc.equal(kind, TOKEN), pc.fill_null(named, False)))
        rows = table.filter(keep).sort_by([("node", "ascending"), ("i", "ascending")])
        self.node: list[str] = rows.column("node").to_pylist()
        self.t: list[int] = rows.column("t").to_pylist()
        self.i: list[int] = rows.column("i").to_pylist()
        self.kind: list[str] = rows.column("kind").to_pylist()
        self.msg: list[str | None] = rows.column("msg").to_pylist()
        self.order: list[str | None] = rows.column("order").to_pylist()
        self.view: list[str | None] = rows.column("view").to_pylist()
        self.members: list[list[str | None] | None] = rows.column("members").to_pylist()
        self.transitional: list[bool] = [bool(x) for x in rows.column("transitional").to_pylist()]
        text: list[str | None] = rows.column("detail").to_pylist()
        empty: dict[str, Any] = {}
        self.detail: list[dict[str, Any]] = [
            _parse(x) if x is not None and kind in PARSED else empty
            for x, kind in zip(text, self.kind, strict=True)
        ]
        if TOKEN in self.kind:
            drop = {
                k
                for k in range(len(text))
                if self.kind[k] == TOKEN and _get(self.detail[k], "op") not in TOKEN_OPS
            }
            if drop:
                kept = [k for k in range(len(text)) if k not in drop]
                for name in ("node", "t", "i", "kind", "msg", "order", "view", "members",
                             "transitional", "detail"):  # fmt: skip
                    column = getattr(self, name)
                    setattr(self, name, [column[k] for k in kept])
        n = len(self.kind)
        self.action: list[str | None] = [
            _get(self.detail[k], "action") if self.kind[k] == "fault" else None for k in range(n)
        ]
        self.reset = [a in RESET_ACTIONS for a in self.action]
        self.regular = [self.kind[k] == "view" and not self.transitional[k] for k in range(n)]
        # the rows are sorted by node, then i: each node's rows are one range
        self.by_node: dict[str, range] = {}
        start = 0
        for k in range(1, n + 1):
            if k == n or self.node[k] != self.node[start]:
                self.by_node[self.node[start]] = range(start, k)
                start = k
            elif self.i[k] == self.i[k - 1]:
                raise Unsure("two rows of a node with one i")
        # cur_row (the last view row since the last reset, this row included: the
        # annotation's ``cur``), prev_reg / next_reg (the regular configuration
        # installed before / after)
        self.cur_row: list[int] = [-1] * n
        """The row of the install of the node's current configuration (-1: none)."""
        self.prev_reg: list[str | None] = [None] * n
        self.next_reg: list[str | None] = [None] * n
        for rows in self.by_node.values():
            cur_row = -1
            reg: str | None = None
            for k in rows:
                if self.reset[k]:
                    cur_row = -1
                elif self.kind[k] == "view":
                    cur_row = k
                self.cur_row[k] = cur_row
                self.prev_reg[k] = reg
                if self.reset[k]:
                    reg = None
                elif self.regular[k]:
                    reg = self.view[k]
            reg = None
            for k in reversed(rows):
                self.next_reg[k] = reg
                if self.reset[k]:
                    reg = None
                elif self.regular[k]:
                    reg = self.view[k]

    def cur_view(self, k: int) -> str | None:
        """The id of the configuration the node is in at row ``k`` (the annotation's
        ``cur.view``), None outside one."""
        return self.view[self.cur_row[k]] if self.cur_row[k] >= 0 else None

    def rows(self, kind: str) -> list[int]:
        """The rows of one kind, per node in event order, node after node."""
        if self._of_kind is None:
            self._of_kind = defaultdict(list)
            for k, name in enumerate(self.kind):
                self._of_kind[name].append(k)
        return self._of_kind.get(kind, [])

    def ends(self) -> dict[str, _End]:
        """How each node ends (:func:`_ends`), computed once."""
        if self._ends is None:
            self._ends = _ends(self)
        return self._ends


# ------------------------------------------------------------------ the screens


def view_agreement(run: Run) -> bool:
    sets: dict[str, set[str]] = defaultdict(set)
    for k in run.rows("view"):
        if run.view[k] is None or run.transitional[k]:
            continue
        key = members_key(run.members[k])
        if key is not None:
            sets[run.view[k]].add(key)  # type: ignore[index]
    return any(len(s) > 1 for s in sets.values())


def leader_agreement(run: Run) -> bool:
    leaders: dict[str, set[str]] = defaultdict(set)
    for k in run.rows("leader"):
        d = run.detail[k]
        leader = _get(d, "leader")
        if leader is None:
            leader = _get(d, "coordinator")
        if leader is None:
            continue
        view = run.view[k]
        leaders[view if view is not None else (run.cur_view(k) or "")].add(leader)
    return any(len(s) > 1 for s in leaders.values())


def integrity(run: Run) -> bool:
    submitted = {run.msg[k] for k in range(len(run.kind)) if run.kind[k] == "submit"}
    seen: set[tuple[str, str | None]] = set()
    for k in run.rows("deliver"):
        key = (run.node[k], run.msg[k])
        if key in seen or run.msg[k] not in submitted:
            return True
        seen.add(key)
    return False


def sender_counter(msg: str | None) -> tuple[str | None, int | None]:
    """:func:`~ringcast.lab.checks.context.msg_sender` and ``msg_counter`` of one id."""
    if msg is None:
        return None, None
    if ":" not in msg:
        return "", None
    sender, _, tail = msg.rpartition(":")
    if not tail or any(c not in "0123456789" for c in tail):
        return sender, None
    counter = int(tail)
    return sender, counter if counter < 2**63 else None


def fifo(run: Run) -> bool:
    parsed: dict[str | None, tuple[str | None, int | None]] = {}
    for rows in run.by_node.values():
        first: set[str | None] = set()
        last: dict[str | None, int] = {}
        for k in rows:
            if run.kind[k] != "deliver":
                continue
            m = run.msg[k]
            if m not in parsed:
                parsed[m] = sender_counter(m)
            sender, counter = parsed[m]
            if counter is None or m in first:
                continue
            first.add(m)
            if sender in last and counter < last[sender]:
                return True
            last[sender] = counter
    return False


def total_order(run: Run) -> bool:
    succ: dict[str, set[str]] = defaultdict(set)
    indeg: dict[str, int] = defaultdict(int)
    for rows in run.by_node.values():
        seen: set[str] = set()
        prev: str | None = None
        for k in rows:
            if run.kind[k] != "deliver":
                continue
            m = run.msg[k]
            if m is None or m in seen:
                return True
            seen.add(m)
            indeg[m] += 0
            if prev is not None and m not in succ[prev]:
                succ[prev].add(m)
                indeg[m] += 1
            prev = m
    ready = [m for m, d in indeg.items() if d == 0]
    placed = 0
    while ready:
        m = ready.pop()
        placed += 1
        for nxt in succ.get(m, ()):
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return placed < len(indeg)


def virtual_synchrony(run: Run) -> bool:
    movers: dict[tuple[str, str], set[str]] = defaultdict(set)
    got: dict[tuple[str, str, str | None], set[str]] = defaultdict(set)
    for node, rows in run.by_node.items():
        for k in rows:
            v1 = run.prev_reg[k]
            if v1 is None:
                continue
            if run.regular[k] and run.view[k] is not None:
                movers[(v1, run.view[k])].add(node)  # type: ignore[index]
            elif run.kind[k] == "deliver" and run.next_reg[k] is not None:
                got[(v1, run.next_reg[k], run.msg[k])].add(node)  # type: ignore[index]
    return any(
        (v1, v2) in movers and movers[(v1, v2)] - nodes for (v1, v2, _m), nodes in got.items()
    )


def safe_delivery(run: Run) -> bool:
    """Every member of the configuration a safe message was delivered in delivered it
    safe too (the exact check's exceptions, a member that crashed, left or was on its
    way out, and the grace at the run's end, only clear more)."""
    safe = [k for k in run.rows("deliver") if run.order[k] == "safe"]
    got: dict[str | None, set[str]] = defaultdict(set)
    for k in safe:
        got[run.msg[k]].add(run.node[k])
    # each (message, member list) once: linear in the deliveries, whatever the group size
    seen: set[tuple[str, tuple[str | None, ...]]] = set()
    for k in safe:
        msg = run.msg[k]
        if msg is None:
            return True
        install = run.cur_row[k]
        members = run.members[install] if install >= 0 else None
        if members is None or (msg, shape := tuple(members)) in seen:
            continue
        if any(m not in got[msg] for m in members):
            return True
        seen.add((msg, shape))
    return False


def _has_merge(run: Run) -> bool:
    """Whether a configuration of the run was installed from two or more others."""
    sources: dict[str | None, set[str]] = defaultdict(set)
    for k in run.rows("view"):
        came = run.prev_reg[k]
        if run.regular[k] and came is not None and came != run.view[k]:
            sources[run.view[k]].add(came)
    return any(len(s) > 1 for s in sources.values())


def merge_atomicity(run: Run) -> bool:
    """A run with no configuration installed from two or more others (``prev_reg``, not
    itself) has no merge, and every rule is about merges: it holds. A run with one is
    judged by the plain-Python reference (:func:`ringcast.lab.reference.merge_atomicity`,
    which ``tests/lab/test_merge_atomicity.py`` holds to the exact check, clause by
    clause); a run it finds violating, or cannot read, goes to the exact check."""
    from ringcast.lab import reference

    if not _has_merge(run):
        return False
    rows = [
        {
            "node": run.node[k],
            "i": run.i[k],
            "t": run.t[k],
            "kind": run.kind[k],
            "detail": {"action": run.action[k], "groups": run.detail[k].get("groups")},
            "transitional": run.transitional[k],
            "view": run.view[k],
            "members": run.members[k],
        }
        for k in sorted(run.rows("fault") + run.rows("view"))
    ]
    try:
        return bool(reference.merge_atomicity(rows))
    except (TypeError, ValueError, KeyError, AttributeError):
        return True  # rows the reference cannot read: the exact check decides


def _overlap(intervals: list[tuple[str, str, int, int]]) -> bool:
    """Two intervals (node, scope, start, end) of different nodes in one scope, one
    starting before the other ends: every overlap the exact checks' running maximum
    finds, and more."""
    by_scope: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for node, scope, start, end in intervals:
        by_scope[scope].append((start, node, end))
    for ivs in by_scope.values():
        ivs.sort()
        best: tuple[int, str] | None = None  # the latest end so far, and its node
        second = -(2**63)  # the latest end so far among the other nodes' intervals
        for start, node, end in ivs:
            if best is not None:
                other = best[0] if best[1] != node else second
                if start < other:
                    return True
            if best is None:
                best = (end, node)
            elif node == best[1]:
                best = (max(best[0], end), node)
            elif end > best[0]:
                second, best = best[0], (end, node)
            else:
                second = max(second, end)
    return False


def _holds(
    run: Run, event: Callable[[int], bool], starts: Callable[[int], bool]
) -> list[tuple[str, str, int, int]]:
    """(node, scope, start, end) of each interval: a start row to the node's next other
    event row, else the run's end; the scope is the start's configuration."""
    out = []
    for node, rows in run.by_node.items():
        events = [k for k in rows if event(k)]
        end = run.tmax
        for k in reversed(events):
            if starts(k):
                out.append((node, run.cur_view(k) or "", run.t[k], end))
            else:
                end = run.t[k]
    return out


def mutual_exclusion(run: Run) -> bool:
    def lock(k: int) -> bool:
        return run.kind[k] == "lock" and _get(run.detail[k], "op") in ("granted", "released")

    def event(k: int) -> bool:
        return lock(k) or (run.kind[k] == "fault" and run.action[k] in ("crash", "leave"))

    def granted(k: int) -> bool:
        return run.kind[k] == "lock" and _get(run.detail[k], "op") == "granted"

    holds = [(node, "", start, end) for node, _scope, start, end in _holds(run, event, granted)]
    return _overlap(holds)


def _token_state(d: Mapping[str, Any], key: str) -> str | None:
    v = _get(d, key)
    return v.lower() if v is not None else None


def single_token(run: Run) -> bool:
    def event(k: int) -> bool:
        kind = run.kind[k]
        if kind == "state":
            return _token_state(run.detail[k], "token_state") is not None
        return kind == TOKEN or (kind == "fault" and run.action[k] in ("crash", "leave"))

    def eating(k: int) -> bool:
        if run.kind[k] != "state":
            return False
        d = run.detail[k]
        view_state = _token_state(d, "view_state") or "agreement"
        return _token_state(d, "token_state") == "eating" and view_state == "agreement"

    return _overlap(_holds(run, event, eating))


@dataclass
class _End:
    """How a node ends (:func:`ringcast.lab.checks._ends.node_ends`)."""

    alive: bool
    fin: tuple[str | None, list[str | None] | None, int] | None
    life_t: int | None
    reset_i: int


def _ends(run: Run) -> dict[str, _End]:
    stats: dict[str, str] = {}
    for k in run.rows("stats"):  # node after node, each in event order: the last wins
        if (state := _get(run.detail[k], "state")) is not None:
            stats[run.node[k]] = state
    if not stats:
        # the runtime's traces: a node's end is judged from where its trace stops
        raise Unsure("no stats row says a node's state")
    life_t: dict[str, int] = {}
    reset_i: dict[str, int] = {}
    for k in run.rows("fault"):
        node = run.node[k]
        if run.action[k] in LIFE_ACTIONS:
            life_t[node] = max(life_t.get(node, run.t[k]), run.t[k])
        if run.reset[k]:
            reset_i[node] = max(reset_i.get(node, -1), run.i[k])
    fin: dict[str, tuple[str | None, list[str | None] | None, int] | None] = {}
    for k in run.rows("view"):
        node = run.node[k]
        if run.regular[k] and run.i[k] > reset_i.get(node, -1):
            fin[node] = (run.view[k], run.members[k], run.t[k])
    return {
        node: _End(stats.get(node) == "up", fin.get(node), life_t.get(node), reset_i.get(node, -1))
        for node in run.by_node
    }


def _timeout(run: Run) -> int:
    recorded = []
    for k in run.rows("stats"):
        v = run.detail[k].get("detection_timeout")
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise Unsure("a recorded timeout that is no integer")
        recorded.append(v)
    return max(recorded) if recorded else run.params.timeouts[run.protocol]


def _components(run: Run, live: list[str]) -> dict[int, list[str]]:
    cut: tuple[int, int, Mapping[str, Any]] | None = None
    for k in run.rows("fault"):
        if run.action[k] in ("partition", "heal") and (
            cut is None or (run.t[k], run.i[k]) > cut[:2]
        ):
            cut = (run.t[k], run.i[k], run.detail[k])
    groups = cut[2].get("groups") if cut is not None else None
    if groups is not None and not (
        isinstance(groups, list)
        and all(isinstance(g, list) and all(isinstance(x, str) for x in g) for g in groups)
    ):
        raise Unsure("a partition's groups of another shape")
    comps: dict[int, list[str]] = defaultdict(list)
    for node in live:
        comp = max((j + 1 for j, g in enumerate(groups or ()) if node in g), default=0)
        comps[comp].append(node)
    return comps


def convergence(run: Run) -> bool:
    ends = run.ends()
    live = sorted(n for n, e in ends.items() if e.alive)
    faults = [run.t[k] for k in run.rows("fault")]
    tf = max(faults, default=0)
    bound = _timeout(run) * run.params.convergence_bound
    on_members = run.protocol in run.params.on_members
    for comp in _components(run, live).values():
        members = set(comp)
        changes: list[tuple[int, int, str, str | None]] = []
        for node in comp:
            for k in run.by_node[node]:
                if run.reset[k]:
                    changes.append((run.t[k], run.i[k], node, None))
                elif run.regular[k]:
                    ms = run.members[k]
                    value: str
                    if ms is not None and None not in ms and sorted({str(m) for m in ms}) == comp:
                        mk = members_key(ms)
                        parts = (run.view[k], mk)
                        value = (
                            mk or ""
                            if on_members
                            else "\u0002".join(x for x in parts if x is not None)
                        )
                    else:
                        value = "\u0003" + node
                    changes.append((run.t[k], run.i[k], node, value))
        changes.sort(key=lambda c: c[:3])
        if _worst(changes, members, tf, run.tmax) > bound:
            return True
    return False


def _worst(changes: list[Any], live: set[str], tf: int, tmax: int) -> int:
    """The longest unsettled period of a component from ``tf`` on: the walk of
    :func:`ringcast.lab.checks.convergence._walk`."""
    m: dict[str, str] = {}

    def settled() -> bool:
        values = set(m.values())
        return (
            len(m) == len(live) and len(values) == 1 and not next(iter(values)).startswith("\u0003")
        )

    judged = prev = False
    start, worst = tf, 0
    for t, _i, node, value in changes:
        entering = not judged and t >= tf
        if entering:
            judged = True
            prev = settled()
        if value is None:
            m.pop(node, None)
        else:
            m[node] = value
        now = settled()
        if judged:
            if prev and not now:
                start = t
            elif now and not prev and t - start > worst:
                worst = t - start
            prev = now
    if not judged:
        prev = settled()
        start = tf
    if not prev and tmax - start > worst:
        worst = tmax - start
    return worst


def delivery_progress(run: Run) -> bool:
    ends = run.ends()
    tf = max((run.t[k] for k in run.rows("fault")), default=0)
    pending: dict[str, dict[str | None, int]] = defaultdict(dict)
    for k in run.rows("submit"):
        node = run.node[k]
        if ends[node].alive and run.i[k] > ends[node].reset_i:
            mine = pending[node]
            m, t = run.msg[k], run.t[k]
            mine[m] = min(mine.get(m, t), t)
    delivered: dict[str, set[str | None]] = defaultdict(set)
    last_delivery: dict[str, int] = {}
    for k in run.rows("deliver"):
        node = run.node[k]
        if node in pending and run.i[k] > ends[node].reset_i:
            delivered[node].add(run.msg[k])
            last_delivery[node] = max(last_delivery.get(node, 0), run.t[k])
    for node, submitted in pending.items():
        got = delivered[node]
        waiting = [t for m, t in submitted.items() if m is None or m not in got]
        if not waiting:
            continue
        end = ends[node]
        stall_from = max(
            last_delivery.get(node, 0),
            min(waiting),
            tf,
            end.life_t or 0,
            end.fin[2] if end.fin is not None else 0,
        )
        if run.tmax - stall_from > run.params.progress_bound:
            return True
    return False


SCREENS: dict[str, Callable[[Run], bool]] = {
    f.__name__: f
    for f in (
        view_agreement,
        leader_agreement,
        integrity,
        fifo,
        total_order,
        virtual_synchrony,
        safe_delivery,
        mutual_exclusion,
        single_token,
        convergence,
        delivery_progress,
        merge_atomicity,
    )
}
"""Per screened property, whether a run may violate it."""


def screen_run(table: pa.Table, params: Params, names: tuple[str, ...]) -> list[str]:
    """The properties of ``names`` one run (``table``: :data:`COLUMNS`) may violate."""
    try:
        run = Run(table, params, names)
    except Unsure:
        return list(names)
    flagged = []
    for name in names:
        try:
            if SCREENS[name](run):
                flagged.append(name)
        except Unsure:
            flagged.append(name)
    return flagged


def _flagger(
    params: Params, names: Mapping[str, tuple[str, ...]]
) -> Callable[[pa.Table], pa.Table]:
    """The function applied to each run's rows: (run, property) of the properties it
    may violate, of those its protocol is screened for (``names``). Its type hints tell
    Spark it maps one group's table to a table."""
    schema = pa.schema([("run", pa.string()), ("property", pa.string())])

    def flag(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return schema.empty_table()
        run = table.column("run")[0].as_py()
        flagged = screen_run(table, params, names.get(table.column("protocol")[0].as_py(), ()))
        return pa.table({"run": [run] * len(flagged), "property": flagged}, schema=schema)

    return flag


def screen(ctx: CheckContext, todo: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """``todo`` (property: its runs) less the runs the screen clears: one Spark job,
    the trace grouped by run and each run screened in a Python worker."""
    from pyspark.sql import functions as F

    names = tuple(sorted(n for n in todo if n in SCREENS and todo[n]))
    runs = sorted({r for n in names for r in todo[n]})
    if not runs:
        return dict(todo)
    spark = ctx.trace.sparkSession
    protocol = {r["run"]: r["protocol"] for r in ctx.run_info}
    by_protocol: dict[str, set[str]] = defaultdict(set)
    for n in names:
        for r in todo[n]:
            by_protocol[protocol[r]].add(n)
    protocols = set(by_protocol)
    wanted = small_frame(spark, [(r,) for r in runs], "run string")
    # only the kinds a screen reads (the ends of the runs come from their inventory): the
    # token rows of the protocols single_token reads them of, whose text names an op
    token = sorted(p for p, ns in by_protocol.items() if "single_token" in ns)
    named = F.col("detail").contains("sent")
    for op in TOKEN_OPS[1:]:
        named = named | F.col("detail").contains(op)
    kinds = F.col("kind").isin(*(k for k in KINDS if k != TOKEN)) | (
        (F.col("kind") == TOKEN) & F.col("protocol").isin(*token) & named if token else F.lit(False)
    )
    rows = ctx.trace.filter(kinds).select(*COLUMNS).join(F.broadcast(wanted), "run", "left_semi")
    if ctx.partitions:
        rows = rows.repartition(ctx.partitions, "run")
    flagged = (
        rows.groupBy("run")
        .applyInArrow(
            _flagger(
                params(ctx, protocols, {r["run"]: int(r["tmax"]) for r in ctx.run_info}),
                {p: tuple(sorted(ns)) for p, ns in by_protocol.items()},
            ),
            "run string, property string",
        )
        .collect()
    )
    keep: dict[str, set[str]] = defaultdict(set)
    for row in flagged:
        keep[row.property].add(row.run)
    return {n: [r for r in rs if n not in names or r in keep[n]] for n, rs in todo.items()}
