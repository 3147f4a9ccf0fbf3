"""A space-time diagram of one run, drawn the way ShiViz and Maelstrom's timeline draw one.

One lane per node, time to the right. On each lane: the configurations the node
installed as bands (one colour per configuration as installed, its id, members and
kind, named so in the legend; transitional ones paler), faults as marked spans (a
crash until the restart, a pause until the resume, a partition until the heal, a link
down until it is up again, a leave until the join) with a marker where each begins,
lock holds as bars, submits as dots and deliveries as ticks. Between lanes: an arrow
from a message's ``submit`` to each of its deliveries at other nodes, and an arrow for
each token pass (a ``token`` row with op ``sent`` matched to the next ``received`` of the same
sequence number at another node). Counterexamples found by the lab's checks are drawn
as highlighted events (``Highlight``); the diagram opened with ``#<highlight id>`` in
its address shows only that one and zooms to it.

The diagram reads only the trace schema's columns and kinds (``docs/trace-schema.md``):
it names no protocol, and rows of kinds it does not know are left out. The figure is
a Plotly figure (zoom with the mouse, double-click to reset, hover for the event).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ringcast.lab.errors import LabError

MS = 1e6
VIEW_COLOURS = (
    "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
)  # fmt: skip
FAULT_SPANS = {  # action that opens a span -> actions that close it, colour
    "crash": (("restart", "join"), "#d62728"),
    "pause": (("resume",), "#ff7f0e"),
    "partition": (("heal",), "#9467bd"),
    "link_down": (("link_up",), "#8c564b"),
    "leave": (("join",), "#7f7f7f"),
}
INSTANT_FAULT_COLOUR = "#e377c2"
ARROWHEADS_UP_TO = 4000
"""Arrows drawn as SVG with heads up to this many per kind; more go to WebGL lines
without heads (the delivery ticks still mark where they end)."""
MAX_ARROWS = 30000
"""At most this many message arrows (and as many token arrows) per diagram; beyond it
an even sample is drawn and the title says so (ticks and bands are always complete)."""
LANE = 0.32
READABLE_ARROWS = 1500
"""A run with more arrows opens zoomed on the time of its first this many."""
FAULT_MARGIN_MS = 100.0
"""A run with faults opens on them: from this long (at least) before the first."""


@dataclass(frozen=True)
class Highlight:
    """Events of one counterexample to draw on the diagram (from ``check.json``)."""

    id: str
    label: str
    note: str = ""
    nodes: Sequence[str] = ()
    msgs: Sequence[str] = ()
    views: Sequence[str] = ()
    times: Sequence[int] = ()
    t: int | None = None

    @classmethod
    def of(cls, ident: str, label: str, cx: dict[str, Any]) -> Highlight:
        return cls(
            id=ident,
            label=label,
            note=str(cx.get("note") or ""),
            nodes=tuple(cx.get("nodes") or ()),
            msgs=tuple(cx.get("msgs") or ()),
            views=tuple(v for v in cx.get("views") or () if v is not None),
            times=tuple(int(x) for x in cx.get("times") or () if x is not None),
            t=cx.get("t"),
        )


@dataclass
class _Rows:
    """A run's rows as plain columns, sorted by (node, i); the row numbers of each kind
    in :meth:`of`; ``detail`` parsed on first use (most rows never need it)."""

    node: list[str]
    t: list[int]
    kind: list[str]
    msg: list[str | None]
    order: list[str | None]
    view: list[str | None]
    members: list[list[str] | None]
    transitional: list[bool | None]
    raw_detail: list[str | None]
    n: int = field(init=False)
    by_kind: dict[str, list[int]] = field(init=False)
    detail: _Details = field(init=False)

    def __post_init__(self) -> None:
        self.n = len(self.t)
        self.by_kind = {}
        for k, kind in enumerate(self.kind):
            self.by_kind.setdefault(kind, []).append(k)
        self.detail = _Details(self.raw_detail)

    def of(self, *kinds: str) -> list[int]:
        """The row numbers of ``kinds``, in row order."""
        if len(kinds) == 1:
            return self.by_kind.get(kinds[0], [])
        return sorted(k for kind in kinds for k in self.by_kind.get(kind, []))


class _Details:
    """``detail`` JSON parsed on demand: a dict per row ({} when null or not an object)."""

    def __init__(self, raw: list[str | None]):
        self.raw = raw
        self.parsed: dict[int, dict[str, Any]] = {}

    def __getitem__(self, k: int) -> dict[str, Any]:
        v = self.parsed.get(k)
        if v is None:
            text = self.raw[k]
            try:
                loaded = json.loads(text) if text else {}
            except ValueError:
                loaded = {}
            v = loaded if isinstance(loaded, dict) else {}
            self.parsed[k] = v
        return v


def _rows(table: pa.Table) -> _Rows:
    table = table.sort_by([("node", "ascending"), ("i", "ascending")])
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    return _Rows(
        node=cols["node"],
        t=cols["t"],
        kind=cols["kind"],
        msg=cols["msg"],
        order=cols["order"],
        view=cols["view"],
        members=cols["members"],
        transitional=cols["transitional"],
        raw_detail=cols["detail"],
    )


def _ms(t: int) -> float:
    """Nanoseconds as milliseconds to the microsecond (short in the page's JSON)."""
    return (t // 1000) / 1000


def _box(x0: float, x1: float, y: float, h: float) -> tuple[list[float | None], list[float | None]]:
    return [x0, x1, x1, x0, x0, None], [y - h, y - h, y + h, y + h, y - h, None]


def _boxes(name: str, spans: list[tuple[float, float, float, str]], colour: str, **kw: Any) -> dict:
    height = kw.pop("height", LANE)
    xs: list[float | None] = []
    ys: list[float | None] = []
    texts: list[str | None] = []
    for x0, x1, y, text in spans:
        bx, by = _box(x0, x1, y, height)
        xs += bx
        ys += by
        texts += [text] * 5 + [None]
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": xs,
        "y": ys,
        "fill": "toself",
        "fillcolor": colour,
        "line": {"width": 0.5, "color": colour},
        "hoveron": "fills+points",
        "text": texts,
        "hoverinfo": "text",
    }
    trace.update(kw)
    return trace


def _arrows(
    name: str,
    segments: list[tuple[float, float, float, float]],
    colour: str,
    width: float,
    opacity: float = 0.55,
) -> dict:
    total = len(segments)
    if total > MAX_ARROWS:
        step = total / MAX_ARROWS
        segments = [segments[int(k * step)] for k in range(MAX_ARROWS)]
    xs: list[float | None] = []
    ys: list[float | None] = []
    for x0, y0, x1, y1 in segments:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    label = name if total == len(segments) else f"{name} ({len(segments)} of {total} drawn)"
    trace: dict[str, Any] = {
        "name": label,
        "x": xs,
        "y": ys,
        "line": {"width": width, "color": colour},
        "opacity": opacity,
        "hoverinfo": "skip",
        "legendgroup": name,
    }
    if len(segments) <= ARROWHEADS_UP_TO:
        trace.update(
            type="scatter",
            mode="lines+markers",
            marker={
                "symbol": "arrow",
                "angleref": "previous",
                "size": [0, 7, 0] * len(segments),
                "color": colour,
            },
        )
    else:
        trace.update(type="scattergl", mode="lines")
    return trace


def figure(
    table: pa.Table,
    *,
    run: str | None = None,
    protocol: str | None = None,
    highlights: Iterable[Highlight] = (),
) -> dict[str, Any]:
    """The Plotly figure (a dict) of the space-time diagram of the one run in ``table``
    (trace columns), with ``highlights`` drawn on it."""
    rows = _rows(table)
    if rows.n == 0:
        raise LabError(f"run {run!r}: no trace rows")
    nodes = sorted({n for n in rows.node if n != "-"})
    lane = {n: k for k, n in enumerate(nodes)}
    tmax = max(rows.t)
    end = _ms(tmax)
    traces: list[dict[str, Any]] = []

    # which nodes a crash or leave ends the views of, and when
    stops: dict[str, list[int]] = {}
    for k in rows.of("fault"):
        if rows.kind[k] == "fault" and rows.detail[k].get("action") in ("crash", "leave"):
            stops.setdefault(rows.node[k], []).append(rows.t[k])

    # views as bands: one colour per configuration as a node installed it (its id,
    # members and kind), so that nodes which disagree on one id show two colours
    ViewKey = tuple[str, tuple[str, ...], bool]
    view_keys: list[ViewKey] = []
    bands: dict[ViewKey, list[tuple[float, float, float, str]]] = {}
    by_node: dict[str, list[int]] = {}
    for k in rows.of("view"):
        if rows.kind[k] == "view" and rows.node[k] in lane:
            by_node.setdefault(rows.node[k], []).append(k)
    for node, ks in by_node.items():
        for j, k in enumerate(ks):
            vid = str(rows.view[k])
            t0 = rows.t[k]
            t1 = rows.t[ks[j + 1]] if j + 1 < len(ks) else tmax
            later = [s for s in stops.get(node, []) if s >= t0]
            if later:
                t1 = min(t1, min(later))
            members = tuple(rows.members[k] or [])
            key = (vid, members, bool(rows.transitional[k]))
            if key not in bands:
                view_keys.append(key)
            text = (
                f"{node}: configuration {vid}"
                f"{' (transitional)' if rows.transitional[k] else ''}<br>"
                f"members {', '.join(members) or '(none)'}<br>"
                f"installed at {_ms(t0)} ms"
            )
            bands.setdefault(key, []).append((_ms(t0), _ms(max(t1, t0)), lane[node], text))
    for j, key in enumerate(view_keys):
        vid, members, transitional = key
        colour = VIEW_COLOURS[j % len(VIEW_COLOURS)]
        traces.append(
            _boxes(
                view_label(vid, members, transitional),
                bands[key],
                colour,
                opacity=0.45 if transitional else 0.85,
                legendgroup="views",
                legendgrouptitle={"text": "configurations"},
            )
        )

    # faults as spans, with a marker where each begins
    spans: dict[str, list[tuple[float, float, float, str]]] = {}
    starts: dict[str, tuple[list[float], list[int], list[str]]] = {}
    open_: dict[tuple[str, str], tuple[int, str]] = {}
    for k in rows.of("fault"):
        if rows.kind[k] != "fault" or rows.node[k] not in lane:
            continue
        d = rows.detail[k]
        action = str(d.get("action", "fault"))
        node = rows.node[k]
        params = ", ".join(f"{a}={v}" for a, v in sorted(d.items()) if a != "action")
        text = f"{action} at {node}, {_ms(rows.t[k])} ms" + (f"<br>{params}" if params else "")
        xs, ys, tx = starts.setdefault(action, ([], [], []))
        xs.append(_ms(rows.t[k]))
        ys.append(lane[node])
        tx.append(text)
        for opener, (closers, _) in FAULT_SPANS.items():
            if action in closers and (node, opener) in open_:
                t0, what = open_.pop((node, opener))
                spans.setdefault(opener, []).append(
                    (_ms(t0), _ms(rows.t[k]), lane[node], f"{what}<br>until {_ms(rows.t[k])} ms")
                )
        if action in FAULT_SPANS:
            if (node, action) in open_:  # a second partition before a heal: close the first
                t0, what = open_.pop((node, action))
                spans.setdefault(action, []).append((_ms(t0), _ms(rows.t[k]), lane[node], what))
            open_[(node, action)] = (rows.t[k], text)
    for (node, action), (t0, what) in open_.items():
        spans.setdefault(action, []).append((_ms(t0), end, lane[node], f"{what}<br>until the end"))
    for action, sp in spans.items():
        colour = FAULT_SPANS[action][1]
        traces.append(
            _boxes(
                f"{action} (span)",
                sp,
                colour,
                height=LANE + 0.08,
                opacity=0.35,
                fillpattern={"shape": "/", "fgcolor": colour, "solidity": 0.3},
                legendgroup="faults",
                legendgrouptitle={"text": "faults"},
            )
        )
    for action, (xs, ys, tx) in starts.items():
        colour = FAULT_SPANS.get(action, ((), INSTANT_FAULT_COLOUR))[1]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": action,
                "x": xs,
                "y": [y - LANE - 0.12 for y in ys],
                "marker": {"symbol": "triangle-down", "size": 11, "color": colour},
                "text": tx,
                "hoverinfo": "text",
                "legendgroup": "faults",
            }
        )

    # lock holds
    holds: list[tuple[float, float, float, str]] = []
    granted: dict[str, int] = {}
    for k in rows.of("lock", "fault"):
        node = rows.node[k]
        if node not in lane:
            continue
        op = rows.detail[k].get("op")
        if rows.kind[k] == "lock" and op == "granted":
            granted[node] = rows.t[k]
        elif node in granted and (
            (rows.kind[k] == "lock" and op == "released")
            or (rows.kind[k] == "fault" and rows.detail[k].get("action") in ("crash", "leave"))
        ):
            t0 = granted.pop(node)
            holds.append((_ms(t0), _ms(rows.t[k]), lane[node], f"{node} holds the lock"))
    holds += [(_ms(t0), end, lane[n], f"{n} holds the lock") for n, t0 in granted.items()]
    if holds:
        traces.append(_boxes("lock held", holds, "#2ca02c", height=0.08, legendgroup="lock"))

    # message arrows, submits as dots, deliveries as ticks
    submit_at: dict[str, tuple[str, int]] = {}
    for k in rows.of("submit"):
        submitted = rows.msg[k]
        if rows.kind[k] == "submit" and submitted is not None:
            submit_at.setdefault(submitted, (rows.node[k], rows.t[k]))
    msg_arrows: list[tuple[float, float, float, float]] = []
    ticks: tuple[list[float], list[int], list[str]] = ([], [], [])
    for k in rows.of("deliver"):
        if rows.kind[k] != "deliver" or rows.msg[k] is None or rows.node[k] not in lane:
            continue
        msg = str(rows.msg[k])
        ticks[0].append(_ms(rows.t[k]))
        ticks[1].append(lane[rows.node[k]])
        ticks[2].append(f"{rows.node[k]} delivers {msg} ({rows.order[k] or '-'})")
        origin = submit_at.get(msg)
        if origin is not None and origin[0] != rows.node[k] and origin[0] in lane:
            msg_arrows.append((_ms(origin[1]), lane[origin[0]], _ms(rows.t[k]), lane[rows.node[k]]))
    if msg_arrows:
        traces.append(_arrows("message", msg_arrows, "#1f77b4", 0.8))

    # token passes: sent -> the next received of the same sequence number elsewhere
    sent: dict[Any, tuple[list[int], list[str]]] = {}
    token_marks: tuple[list[float], list[int], list[str]] = ([], [], [])
    for k in rows.of("token"):
        if rows.kind[k] != "token":
            continue
        d = rows.detail[k]
        token_key = d.get("token_seq", d.get("seq"))
        if d.get("op") == "sent" and token_key is not None:
            ts, ns = sent.setdefault(token_key, ([], []))
            ts.append(rows.t[k])
            ns.append(rows.node[k])
        elif d.get("op") not in ("sent", "received") and rows.node[k] in lane:
            token_marks[0].append(_ms(rows.t[k]))
            token_marks[1].append(lane[rows.node[k]])
            token_marks[2].append(
                f"token {d.get('op')} at {rows.node[k]}"
                + (f" ({d.get('reason')})" if d.get("reason") else "")
            )
    for ts_ns in sent.values():  # rows come by node: sort each key's sends by time
        order = sorted(range(len(ts_ns[0])), key=lambda j: ts_ns[0][j])
        ts_ns[0][:] = [ts_ns[0][j] for j in order]
        ts_ns[1][:] = [ts_ns[1][j] for j in order]
    token_arrows: list[tuple[float, float, float, float]] = []
    for k in rows.of("token"):
        d = rows.detail[k]
        if rows.kind[k] != "token" or d.get("op") != "received" or rows.node[k] not in lane:
            continue
        token_key = d.get("token_seq", d.get("seq"))
        if token_key not in sent:
            continue
        ts, ns = sent[token_key]
        j = bisect.bisect_right(ts, rows.t[k]) - 1
        src = d.get("src")
        while j >= 0 and (ns[j] == rows.node[k] or (src is not None and ns[j] != src)):
            j -= 1
        if j >= 0 and ns[j] in lane:
            token_arrows.append((_ms(ts[j]), lane[ns[j]], _ms(rows.t[k]), lane[rows.node[k]]))
    if token_arrows:
        traces.append(_arrows("token pass", token_arrows, "#e6550d", 1.4, opacity=0.85))
    if token_marks[0]:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "token created / regenerated / dropped",
                "x": token_marks[0],
                "y": [y + LANE + 0.1 for y in token_marks[1]],
                "marker": {"symbol": "diamond", "size": 7, "color": "#ff7f0e"},
                "text": token_marks[2],
                "hoverinfo": "text",
            }
        )

    subs = [k for k in rows.of("submit") if rows.node[k] in lane]
    if subs:
        traces.append(
            {
                "type": "scattergl" if len(subs) > ARROWHEADS_UP_TO else "scatter",
                "mode": "markers",
                "name": "submit",
                "x": [_ms(rows.t[k]) for k in subs],
                "y": [lane[rows.node[k]] for k in subs],
                "marker": {"symbol": "circle", "size": 4, "color": "#1f77b4"},
                "text": [f"{rows.node[k]} submits {rows.msg[k]} ({rows.order[k]})" for k in subs],
                "hoverinfo": "text",
            }
        )
    if ticks[0]:
        traces.append(
            {
                "type": "scattergl" if len(ticks[0]) > ARROWHEADS_UP_TO else "scatter",
                "mode": "markers",
                "name": "deliver",
                "x": ticks[0],
                "y": ticks[1],
                "marker": {
                    "symbol": "line-ns-open",
                    "size": 12,
                    "color": "#08306b",
                    "line": {"width": 1},
                },
                "text": ticks[2],
                "hoverinfo": "text",
            }
        )

    # counterexamples
    for h in highlights:
        traces += _highlight(rows, lane, h)

    title = f"{run or table.column('run')[0].as_py()}" + (f" ({protocol})" if protocol else "")
    shown = ""  # the stretch the diagram opens on: the title's second line
    fault_ms = [x for xs, _, _ in starts.values() for x in xs]
    view_ms = [_ms(rows.t[k]) for k in rows.of("view") if rows.kind[k] == "view"]
    window = opening_range(fault_ms, view_ms, end)
    view_start, view_end = 0.0, end
    if window is not None:
        # a run with faults opens on them and their aftermath (double-click: all of it)
        view_start, view_end = window
        shown = (
            f"{view_start:.0f}-{view_end:.0f} ms of {end:g}, the faults and after"
            " (double-click: all)"
        )
    else:
        # a dense run opens on its first READABLE_ARROWS arrows (double-click: all of it)
        ends = sorted(a[2] for a in msg_arrows + token_arrows)
        if len(ends) > READABLE_ARROWS:
            view_end = max(ends[READABLE_ARROWS], end / 1000)
            shown = f"the first {view_end:g} ms of {end:g} (double-click for the whole run)"
    label_px = 8 * max((len(n) for n in nodes), default=1) + 36
    return {
        "data": traces,
        "layout": {
            # two lines, so that a long run name is not cut off at the window's edge
            "title": {
                "text": f"space-time diagram: {title}"
                + (f"<br><span style='font-size:13px'>{shown}</span>" if shown else ""),
                "x": 0.01,
                "font": {"size": 15},
            },
            "height": max(460, 160 + 46 * len(nodes)),
            "margin": {"l": max(60, label_px), "r": 20, "t": 80, "b": 50},
            "xaxis": {
                "title": {"text": "time (ms)"},
                "range": [view_start, view_end],
                "zeroline": False,
            },
            "yaxis": {
                "tickvals": list(range(len(nodes))),
                "ticktext": nodes,
                "ticks": "",
                "ticklabelstandoff": 12,  # the lane's name clear of its bands and marks
                "range": [len(nodes) - 0.4, -0.7],
                "zeroline": False,
                "showgrid": True,
                "gridcolor": "#eee",
                "fixedrange": True,
            },
            "hovermode": "closest",
            "legend": {"groupclick": "toggleitem", "font": {"size": 11}},
            "plot_bgcolor": "white",
            "dragmode": "zoom",
        },
    }


def view_label(vid: str, members: tuple[str, ...], transitional: bool) -> str:
    """A configuration's legend entry: its members first, then its id; a transitional
    one (Totem's ``new/t/old``) as the two rings it lies between, not its raw id."""
    shown = ",".join(members[:8]) + (f",… ({len(members)})" if len(members) > 8 else "")
    if transitional:
        new, sep, old = vid.partition("/t/")
        between = f"{old} to {new}" if sep else vid
        return f"{{{shown}}} transitional, {between}"
    return f"{{{shown}}} view {vid}"


def opening_range(
    faults: Sequence[float], views: Sequence[float], end: float
) -> tuple[float, float] | None:
    """The x range (ms) a diagram opens on when its run has faults (``None`` if it has
    none): from the first fault less a margin through the aftermath, the last view
    installed after the first fault or the last fault, whichever is later, plus a
    margin; within ``[0, end]``. The margin is a tenth of that span, at least
    :data:`FAULT_MARGIN_MS`, so that the steady state before the fault shows too."""
    if not faults:
        return None
    first, last = min(faults), max(faults)
    after = max([v for v in views if v >= first] + [last])
    margin = max(FAULT_MARGIN_MS, (after - first) / 10)
    return round(max(0.0, first - margin), 3), round(min(end, after + margin), 3)


def _highlight(rows: _Rows, lane: dict[str, int], h: Highlight) -> list[dict[str, Any]]:
    """The events of counterexample ``h`` as large red markers joined by a line, and a
    vertical line at its time."""
    nodes = set(h.nodes) or set(lane)
    msgs, views, times = set(h.msgs), set(h.views), set(h.times)
    picked = []
    candidates = rows.of("deliver", "submit", "view") if msgs or views else range(rows.n)
    for k in candidates:
        if rows.node[k] not in nodes or rows.node[k] not in lane:
            continue
        kind = rows.kind[k]
        by_msg = bool(msgs) and kind in ("deliver", "submit") and rows.msg[k] in msgs
        by_view = bool(views) and kind == "view" and rows.view[k] in views
        by_time = not msgs and not views and rows.t[k] in times
        if by_msg or by_view or (by_time and kind not in ("token", "state")):
            picked.append(k)
    if msgs:  # the deliveries, not every submit, when the deliveries are there
        delivered = [k for k in picked if rows.kind[k] == "deliver"]
        picked = delivered or picked
    picked = sorted(picked, key=lambda k: rows.t[k])[:60]
    when = [_ms(rows.t[k]) for k in picked] or ([_ms(h.t)] if h.t is not None else [])
    meta: dict[str, Any] = {"highlight": h.id}
    if when:
        pad = max((max(when) - min(when)) * 0.3, 5.0)
        meta["range"] = [round(max(min(when) - pad, -1.0), 3), round(max(when) + pad, 3)]
    # the events of each node joined along its lane (the two deliveries a node made
    # in the wrong order read left to right), labelled with their message or view
    xs: list[float | None] = []
    ys: list[int | None] = []
    labels: list[str] = []
    texts: list[str] = []
    for node in sorted({rows.node[k] for k in picked}):
        for k in (k for k in picked if rows.node[k] == node):
            xs.append(_ms(rows.t[k]))
            ys.append(lane[node])
            op = rows.detail[k].get("op") or rows.detail[k].get("action") or ""
            if rows.kind[k] == "view":
                label = f"{rows.view[k]} {{{','.join(rows.members[k] or [])}}}"
            else:
                label = str(rows.msg[k] or rows.view[k] or f"{rows.kind[k]} {op}")
            labels.append(label)
            texts.append(
                f"{h.label}<br>{node} {rows.kind[k]} {rows.msg[k] or rows.view[k] or ''} "
                f"at {_ms(rows.t[k])} ms<br>{h.note}"
            )
        xs.append(None)
        ys.append(None)
        labels.append("")
        texts.append("")
    out: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers+lines+text",
            "name": h.label,
            "legendgroup": h.id,
            "legendgrouptitle": {"text": "violations"},
            "x": xs,
            "y": ys,
            "marker": {
                "symbol": "circle-open",
                "size": 18,
                "color": "#d00",
                "line": {"width": 3},
            },
            "line": {"color": "#d00", "width": 2, "dash": "dash"},
            "text": labels,
            "textposition": "top center",
            "textfont": {"color": "#d00", "size": 12},
            "hovertext": texts,
            "hoverinfo": "text",
            "meta": meta,
        }
    ]
    if h.t is not None:
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{h.label}: time",
                "showlegend": False,
                "legendgroup": h.id,
                "x": [_ms(h.t), _ms(h.t)],
                "y": [-0.6, len(lane) - 0.5],
                "line": {"color": "#d00", "width": 1, "dash": "dot"},
                "hoverinfo": "text",
                "text": [h.note, h.note],
                "meta": {"highlight": h.id},
            }
        )
    return out


FOCUS_SCRIPT = """
(function () {
  var gd = document.getElementById('{plot_id}');
  function focus() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (!h) return;
    var show = [], hide = [], range = null;
    gd.data.forEach(function (tr, k) {
      if (!tr.meta || !tr.meta.highlight) return;
      if (tr.meta.highlight === h) { show.push(k); range = range || tr.meta.range; }
      else hide.push(k);
    });
    if (!show.length) return;
    if (hide.length) Plotly.restyle(gd, {visible: 'legendonly'}, hide);
    Plotly.restyle(gd, {visible: true}, show);
    if (range) Plotly.relayout(gd, {'xaxis.range': range});
  }
  focus();
  window.addEventListener('hashchange', focus);
})();
"""

CONFIG = {"scrollZoom": True, "displaylogo": False, "responsive": True}


def to_html(fig: dict[str, Any], *, include_plotlyjs: bool | str = True) -> str:
    """A whole HTML page of the diagram; ``include_plotlyjs``: True inlines plotly.js,
    ``"plotly.min.js"`` (any path ending in ``.js``) loads it from beside the page."""
    import plotly.io as pio

    return pio.to_html(
        fig,
        config=CONFIG,
        include_plotlyjs=include_plotlyjs,
        full_html=True,
        post_script=FOCUS_SCRIPT,
        validate=False,
        default_height=f"{fig['layout']['height']}px",
    )


def run_file_name(run: str) -> str:
    """A file name for the diagram of ``run``: its id with unsafe characters replaced,
    and a short hash so that two ids never share a name."""
    import hashlib

    slug = re.sub(r"[^A-Za-z0-9._=-]+", "_", run)[:80]
    return f"{slug}-{hashlib.sha1(run.encode()).hexdigest()[:8]}.html"


def _read_plain(path: Path) -> tuple[pa.Table, str | None]:
    """A trace that is not a sweep output, and its protocol when a ``summary.json``
    beside it names one."""
    from ringcast.trace.reader import read_trace
    from ringcast.trace.validate import TraceSchemaError

    try:
        table = read_trace(path)
    except TraceSchemaError as e:
        raise LabError(str(e)) from None
    protocol = None
    summary = (path if path.is_dir() else path.parent) / "summary.json"
    if summary.is_file():
        try:
            protocol = json.loads(summary.read_text()).get("protocol")
        except ValueError:
            protocol = None
    return table, protocol


def read_run(path: Path, run: str | None = None) -> tuple[pa.Table, str, str | None]:
    """The trace rows of one run at ``path`` (a sweep output, a ``ringcast sim``
    output, a trace directory or file of the runtime) with the run's id and protocol
    (when the input says). ``run`` is needed when ``path`` holds several runs."""
    from ringcast.lab.load import RUNS_FILE, TRACES_DIR
    from ringcast.trace.schema import COLUMNS

    path = Path(path)
    if not path.exists():
        raise LabError(f"{path}: no such file or directory")
    protocol = None
    if (path / RUNS_FILE).is_file() and (path / TRACES_DIR).is_dir():
        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        runs = pq.read_table(path / RUNS_FILE, columns=["run", "protocol", "scenario"])
        ids = runs.column("run").to_pylist()
        if run is None:
            raise LabError(f"{path}: a sweep output holds {len(ids)} runs; name one with --run")
        if run not in ids:
            near = [r for r in ids if run in r][:5]
            raise LabError(
                f"{path}: no run {run!r}" + (f" (did you mean {', '.join(near)}?)" if near else "")
            )
        k = ids.index(run)
        protocol = runs.column("protocol")[k].as_py()
        scenario = runs.column("scenario")[k].as_py()
        part = path / TRACES_DIR / f"protocol={protocol}" / f"scenario={scenario}"
        data = ds.dataset(part if part.is_dir() else path / TRACES_DIR, format="parquet")
        # a sweep of trace format version 1 has no network column
        cols = [c for c in COLUMNS if c in data.schema.names]
        table = data.to_table(columns=cols, filter=pc.field("run") == run)
        return table, run, protocol
    table, protocol = _read_plain(path)
    ids = sorted(set(table.column("run").to_pylist()))
    if not ids:
        raise LabError(f"{path}: holds no trace rows")
    if run is None:
        if len(ids) > 1:
            raise LabError(f"{path}: holds {len(ids)} runs ({', '.join(ids[:5])}...); use --run")
        run = ids[0]
    elif run not in ids:
        raise LabError(f"{path}: no run {run!r} (runs: {', '.join(ids[:5])})")
    import pyarrow.compute as pc

    return table.filter(pc.equal(table.column("run"), run)), run, protocol


def read_runs(path: Path, runs: Iterable[str]) -> dict[str, tuple[pa.Table, str | None]]:
    """The trace rows and protocol of each of ``runs`` found at ``path`` (as
    :func:`read_run`), read in one scan; runs not there are left out."""
    import pyarrow.compute as pc

    from ringcast.lab.load import RUNS_FILE, TRACES_DIR
    from ringcast.trace.schema import COLUMNS

    path = Path(path)
    wanted = list(dict.fromkeys(runs))
    if not wanted:
        return {}
    if (path / RUNS_FILE).is_file() and (path / TRACES_DIR).is_dir():
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        table_runs = pq.read_table(path / RUNS_FILE, columns=["run", "protocol"]).to_pylist()
        protocols = {r["run"]: r["protocol"] for r in table_runs}
        data = ds.dataset(path / TRACES_DIR, format="parquet")
        cols = [c for c in COLUMNS if c in data.schema.names]  # version 1: no network
        table = data.to_table(columns=cols, filter=pc.field("run").isin(wanted))
    else:
        table, protocol = _read_plain(path)
        protocols = dict.fromkeys(wanted, protocol)
    out = {}
    for run in wanted:
        mine = table.filter(pc.equal(table.column("run"), run))
        if mine.num_rows:
            out[run] = (mine, protocols.get(run))
    return out


def write_timeline(
    path: Path,
    out: Path,
    *,
    run: str | None = None,
    protocol: str | None = None,
    highlights: Iterable[Highlight] = (),
    include_plotlyjs: bool | str = True,
) -> Path:
    """Write the space-time diagram of one run at ``path`` to ``out`` (HTML)."""
    table, run, found = read_run(path, run)
    fig = figure(table, run=run, protocol=protocol or found, highlights=highlights)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_html(fig, include_plotlyjs=include_plotlyjs))
    return out
