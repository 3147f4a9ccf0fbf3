"""The report's interactive charts, as Plotly figures built from ``metrics.json``.

* latency: the CDF of submit-to-deliver latency on a log axis, one small chart per
  fault set a run saw (``none``, ``crash+restart``, ...), a line per protocol (colour)
  and delivery order (dash); latencies below :data:`LATENCY_FLOOR_MS` (a sender's own
  deliveries, at 0 ms) are drawn at that floor, as the axis title says, so a curve
  rises from 0 there instead of starting high at the axis' left edge;
* throughput and cost against group size: one chart per protocol, a marker per run
  (hover: run, seed, point) and a line per scenario and grid point other than the
  group size through the mean at each size, never averaged across scenarios; a menu
  switches between messages per second, deliveries per second, packets, bytes and
  retransmissions per message;
* convergence: per fault action, the time from the fault to the last configuration
  installed, a box with every sample (hover: run and the fault's time) per protocol.

Protocols, scenarios, orders and fault actions are whatever the metrics hold: no name
is known in advance. Colours are given per protocol in sorted order, the same in every
chart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

PROTOCOL_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22",
)  # fmt: skip
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
METRICS = (
    ("messages_per_s", "delivered messages per second"),
    ("deliveries_per_s", "deliveries per second (all nodes)"),
    ("packets_per_message", "packets sent per delivered message"),
    ("bytes_per_message", "bytes sent per delivered message"),
    ("retransmits_per_message", "retransmissions per delivered message"),
)
LOG_METRICS = frozenset({"messages_per_s", "deliveries_per_s"})
"""Drawn on a log axis: they span orders of magnitude between scenarios."""
FACET_COLUMNS = 3
LATENCY_FLOOR_MS = 0.01
"""The latency chart's left edge: faster deliveries are drawn here (a log axis has no 0)."""
TITLE_WRAP = 28
"""A subplot title longer than this is broken over lines (it would run into its
neighbours' otherwise)."""


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values for a log axis from ``lo`` to ``hi`` at 1, 2 and 5 times a power of
    ten (only the powers when that gives more than seven), each labelled in full
    ("0.5", "2", "1000"): Plotly's own labels on a short log axis are bare digits
    ("5 1 2 5 10 2") that read as nonsense."""
    if not (lo > 0 and hi >= lo):
        return [], []
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for steps in ((1, 2, 5), (1,)):
        vals = [
            m * 10.0**e
            for e in range(first, last + 1)
            for m in steps
            if lo / 1.0001 <= m * 10.0**e <= hi * 1.0001
        ]
        if len(vals) <= 7:  # as many as a small chart's axis holds unrotated
            break
    while len(vals) > 7:  # a very wide range: every other power of ten
        vals = vals[::2]
    if len(vals) < 2:  # a narrow range: its ends
        vals = sorted({float(f"{lo:.2g}"), float(f"{hi:.2g}")})
    return vals, [f"{v:g}" for v in vals]


def _wrap(title: str, width: int = TITLE_WRAP) -> str:
    """``title`` broken at ``+`` or spaces into lines of about ``width`` characters."""
    if len(title) <= width:
        return title
    lines, line = [], ""
    for piece in title.replace("+", "+\x00").replace(" ", " \x00").split("\x00"):
        if line and len(line) + len(piece) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip())
    return "<br>".join(lines)


def protocol_colours(protocols: Iterable[str]) -> dict[str, str]:
    return {p: PROTOCOL_COLOURS[k % len(PROTOCOL_COLOURS)] for k, p in enumerate(sorted(protocols))}


def _grid(n: int) -> tuple[int, int]:
    cols = min(max(n, 1), FACET_COLUMNS)
    return math.ceil(max(n, 1) / cols), cols


def _subplots(titles: list[str], **kw: Any) -> Any:
    from plotly.subplots import make_subplots

    rows, cols = _grid(len(titles))
    return make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        horizontal_spacing=0.09,
        vertical_spacing=min(0.2, 0.5 / max(rows - 1, 1)) if rows > 1 else 0.1,
        **kw,
    )


def _cell(k: int) -> tuple[int, int]:
    return k // FACET_COLUMNS + 1, k % FACET_COLUMNS + 1


def latency_cdf(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """Latency CDFs per fault set (one chart each), protocol (colour) and order (dash)."""
    rows = metrics.get("latency_histogram") or []
    if not rows:
        return None
    per_decade = float(metrics.get("latency_buckets_per_decade") or 10)
    series: dict[tuple[str, str, str], dict[int, int]] = {}
    scen: dict[tuple[str, str, str], set[str]] = {}
    for r in rows:
        key = (str(r["protocol"]), str(r.get("order") or "-"), str(r.get("faults") or "all"))
        counts = series.setdefault(key, {})
        counts[int(r["bucket"])] = counts.get(int(r["bucket"]), 0) + int(r["count"])
        scen.setdefault(key, set()).update(r.get("scenarios") or [])
    faults = sorted({k[2] for k in series}, key=lambda f: (f != "none", f))
    orders = sorted({k[1] for k in series})
    colours = protocol_colours({k[0] for k in series})
    fig = _subplots([_wrap(f"faults: {f}") for f in faults], shared_yaxes=True)
    shown: set[tuple[str, str]] = set()
    floor = LATENCY_FLOOR_MS
    spans: dict[str, list[float]] = {}
    for key, buckets in sorted(series.items()):
        proto, order, fault = key
        total = sum(buckets.values())
        xs, ys, texts, acc = [floor], [0.0], [f"{proto}, {order}, faults {fault}"], 0
        for b in sorted(buckets):
            acc += buckets[b]
            upper = 10 ** ((b + 1) / per_decade) / 1e6  # ms: the bucket's upper edge
            x = round(max(upper, floor), 4)
            if x == xs[-1] and len(xs) > 1:  # buckets below the floor: one point
                xs.pop(), ys.pop(), texts.pop()
            xs.append(x)
            ys.append(round(acc / total, 5))
            within = f"{upper:.3g} ms" if upper >= floor else f"{floor:g} ms (drawn at it)"
            texts.append(
                f"{proto}, {order}, faults {fault}<br>{acc / total:.1%} of {total} deliveries"
                f" within {within}<br>scenarios: {', '.join(sorted(scen[key]))}"
            )
        span = spans.setdefault(fault, [floor, floor])
        span[1] = max(span[1], xs[-1])
        row, col = _cell(faults.index(fault))
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"shape": "hv", "color": colours[proto], "dash": DASHES[orders.index(order) % 5]},
            name=f"{proto} {order}",
            legendgroup=f"{proto} {order}",
            showlegend=(proto, order) not in shown,
            text=texts,
            hovertemplate="%{text}<extra></extra>",
            row=row,
            col=col,
        )
        shown.add((proto, order))
    fig.update_xaxes(
        type="log",
        title_text=(
            f"latency (ms, log)<br><span style='font-size:11px'>below {floor:g} drawn at"
            f" {floor:g}</span>"
        ),
    )
    for k, fault in enumerate(faults):
        lo, hi = spans[fault]
        vals, text = log_ticks(lo, hi)
        row, col = _cell(k)
        fig.update_xaxes(
            tickvals=vals,
            ticktext=text,
            range=[math.log10(lo) - 0.05, math.log10(hi) + 0.05],
            row=row,
            col=col,
        )
    fig.layout.annotations = [
        {**a.to_plotly_json(), "font": {"size": 13}} for a in fig.layout.annotations
    ]
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    fig.update_yaxes(title_text="fraction delivered within", col=1)
    rows_n, _ = _grid(len(faults))
    fig.update_layout(
        height=130 + 300 * rows_n,
        title_text="submit-to-deliver latency: CDF per fault set, protocol (colour), order (dash)",
        hovermode="closest",
        legend={"title": {"text": "protocol, order"}},
        margin={"t": 90},
    )
    return fig.to_plotly_json()


def _without_size(params: str | None, point: str) -> str:
    """A run's grid point without the group size: the key of its line."""
    if params:
        try:
            p = json.loads(params)
        except ValueError:
            p = None
        if isinstance(p, dict):
            rest = {k: v for k, v in p.items() if k != "nodes"}
            return ",".join(f"{k}={v}" for k, v in sorted(rest.items())) or "-"
    parts = [x for x in point.split(",") if not x.startswith("nodes=")]
    return ",".join(parts) or "-"


def throughput(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """Throughput and cost against group size: a chart per protocol, a marker per run,
    a line per (scenario, grid point but the size) through the means; a menu picks the
    metric."""
    runs = [r for r in metrics.get("runs") or [] if r.get("nodes") is not None]
    if not runs:
        return None
    from plotly.colors import qualitative

    protocols = sorted({str(r["protocol"]) for r in runs})
    fig = _subplots(protocols)
    palette = tuple(qualitative.Dark24) + tuple(qualitative.Light24)
    traces_y: dict[str, list[list[float | None]]] = {m: [] for m, _ in METRICS}
    panel: list[int] = []  # per trace, its chart (the protocol's index)
    drawn = 0  # lines drawn so far: each its own colour, across every chart
    for k, proto in enumerate(protocols):
        row, col = _cell(k)
        mine = [r for r in runs if r["protocol"] == proto]
        lines: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in mine:
            key = (str(r["scenario"]), _without_size(r.get("params"), str(r.get("point"))))
            lines.setdefault(key, []).append(r)
        rests = sorted({key[1] for key in lines})
        for j, ((scenario, rest), group) in enumerate(sorted(lines.items())):
            colour = palette[drawn % len(palette)]
            drawn += 1
            sizes = sorted({int(r["nodes"]) for r in group})
            name = f"{scenario} ({rest})" if rest != "-" else scenario
            # the line through the means at each size; at one size only a level mark
            # as wide as a bar (a lone dot reads as nothing)
            fig.add_scatter(
                x=sizes,
                y=[None] * len(sizes),
                mode="lines" if len(sizes) > 1 else "lines+markers",
                marker={"symbol": "line-ew-open", "size": 28, "line": {"width": 3}},
                line={"color": colour, "width": 1.5, "dash": DASHES[rests.index(rest) % 5]},
                name=name,
                legendgroup=f"{proto}/{name}",
                legendgrouptitle={"text": proto} if j == 0 else None,
                hoverinfo="skip",
                row=row,
                col=col,
            )
            panel.append(k)
            for m, _ in METRICS:
                ys = []
                for n in sizes:
                    vals = [r[m] for r in group if int(r["nodes"]) == n and r.get(m) is not None]
                    ys.append(round(sum(vals) / len(vals), 4) if vals else None)
                traces_y[m].append(ys)
            # one marker per run
            fig.add_scatter(
                x=[int(r["nodes"]) for r in group],
                y=[None] * len(group),
                mode="markers",
                marker={"color": colour, "size": 8, "opacity": 0.75},
                name=name,
                legendgroup=f"{proto}/{name}",
                showlegend=False,
                customdata=[
                    [r["run"], r.get("seed"), r.get("point"), r.get("faults"), r.get("errors")]
                    for r in group
                ],
                hovertemplate=(
                    "run %{customdata[0]}<br>seed %{customdata[1]}<br>point %{customdata[2]}"
                    "<br>faults %{customdata[3]}<br>%{x} nodes: %{y}<extra>" + scenario + "</extra>"
                ),
                row=row,
                col=col,
            )
            panel.append(k)
            for m, _ in METRICS:
                traces_y[m].append(
                    [round(r[m], 4) if r.get(m) is not None else None for r in group]
                )
    first = METRICS[0][0]
    for trace, ys in zip(fig.data, traces_y[first], strict=True):
        trace.y = ys
    axes = [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]

    def y_axes(m: str) -> dict[str, Any]:
        """Each chart's y axis for metric ``m``: log with full tick labels, or linear."""
        out: dict[str, Any] = {}
        for a in axes:
            out[f"{a}.type"] = "log" if m in LOG_METRICS else "linear"
            out[f"{a}.tickvals"] = out[f"{a}.ticktext"] = None
        if m in LOG_METRICS:
            for k in range(len(protocols)):
                vals = [
                    y
                    for ys, p in zip(traces_y[m], panel, strict=True)
                    if p == k
                    for y in ys
                    if y is not None and y > 0
                ]
                if vals:
                    a = "yaxis" if k == 0 else f"yaxis{k + 1}"
                    out[f"{a}.tickvals"], out[f"{a}.ticktext"] = log_ticks(min(vals), max(vals))
        return out

    buttons = [
        {
            "label": label,
            "method": "update",
            "args": [
                {"y": traces_y[m]},
                {"title.text": f"{label} against group size", **y_axes(m)},
            ],
        }
        for m, label in METRICS
    ]
    rows_n, _ = _grid(len(protocols))
    fig.update_xaxes(title_text="nodes", dtick=1)
    fig.update_yaxes(type="log" if first in LOG_METRICS else "linear")
    for path, value in y_axes(first).items():
        if value is not None:
            axis, _, attr = path.partition(".")
            fig.layout[axis][attr] = value
    fig.update_layout(
        height=170 + 320 * rows_n,
        title={"text": f"{METRICS[0][1]} against group size", "y": 0.98, "yanchor": "top"},
        updatemenus=[
            {
                "buttons": buttons,
                "x": 1.0,
                "y": 1.0,
                "xanchor": "right",
                "yanchor": "bottom",
                "pad": {"b": 30},
            }
        ],
        margin={"t": 130},
        hovermode="closest",
        legend={"groupclick": "toggleitem", "font": {"size": 10}},
    )
    return fig.to_plotly_json()


def convergence(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """Per fault action (x), a box per protocol of the time to converge; every sample
    drawn, with its run and fault time on hover."""
    rows = metrics.get("convergence") or []
    if not any(r.get("samples") for r in rows):
        return None
    import plotly.graph_objects as go

    colours = protocol_colours({str(r["protocol"]) for r in rows})
    fig = go.Figure()
    for proto in sorted(colours):
        xs, ys, data = [], [], []
        for r in rows:
            if r["protocol"] != proto:
                continue
            for s in r.get("samples") or []:
                xs.append(str(r["action"]))
                ys.append(s["took_ms"])
                data.append([s.get("run"), s.get("at_ms"), r.get("no_view_change", 0)])
        if not xs:
            continue
        fig.add_box(
            x=xs,
            y=ys,
            name=proto,
            marker={"color": colours[proto], "size": 5},
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            customdata=data,
            hovertemplate=(
                "run %{customdata[0]}<br>fault at %{customdata[1]:.1f} ms<br>"
                "converged %{y:.1f} ms later<extra>" + proto + " %{x}</extra>"
            ),
        )
    fig.update_layout(
        boxmode="group",
        height=420,
        title_text="convergence: fault to the last configuration installed, per fault action",
        yaxis={"title": {"text": "ms"}, "rangemode": "tozero"},
        xaxis={"title": {"text": "fault action"}},
        hovermode="closest",
    )
    return fig.to_plotly_json()
