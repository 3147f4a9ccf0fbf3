"""Dependency-free inline SVG charts for the lab report: lines, bars, strips, timelines."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")
W, H, PAD = 640, 300, 48


def color(k: int) -> str:
    return PALETTE[k % len(PALETTE)]


def _frame(title: str, xlabel: str, ylabel: str, body: list[str], w: int = W, h: int = H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">'
        f'<text x="{w / 2}" y="14" text-anchor="middle" font-size="13">{escape(title)}</text>'
        f'<text x="{w / 2}" y="{h - 4}" text-anchor="middle">{escape(xlabel)}</text>'
        f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">'
        f"{escape(ylabel)}</text>" + "".join(body) + "</svg>"
    )


def _axes(x0: float, x1: float, y0: float, y1: float, w: int = W, h: int = H) -> list[str]:
    out = [
        f'<line x1="{PAD}" y1="{h - PAD}" x2="{w - 10}" y2="{h - PAD}" stroke="#444"/>',
        f'<line x1="{PAD}" y1="24" x2="{PAD}" y2="{h - PAD}" stroke="#444"/>',
    ]
    for k in range(5):
        fy = y0 + (y1 - y0) * k / 4
        py = (h - PAD) - (h - PAD - 24) * k / 4
        out.append(f'<text x="{PAD - 4}" y="{py + 4}" text-anchor="end">{_fmt(fy)}</text>')
        fx = x0 + (x1 - x0) * k / 4
        px = PAD + (w - 10 - PAD) * k / 4
        out.append(f'<text x="{px}" y="{h - PAD + 14}" text-anchor="middle">{_fmt(fx)}</text>')
    return out


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    return a if hi == lo else a + (v - lo) * (b - a) / (hi - lo)


def _legend(names: Sequence[str], w: int = W) -> list[str]:
    return [
        f'<rect x="{w - 150}" y="{28 + 14 * k}" width="10" height="10" fill="{color(k)}"/>'
        f'<text x="{w - 136}" y="{37 + 14 * k}">{escape(n)}</text>'
        for k, n in enumerate(names)
    ]


def line_chart(
    title: str, series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str
) -> str:
    """One polyline with markers per named series of (x, y) points."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return _frame(title, xlabel, ylabel, ['<text x="60" y="60">no data</text>'])
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y1 = max(p[1] for p in pts) or 1.0
    body = _axes(x0, x1, 0.0, y1)
    for k, (name, s) in enumerate(series.items()):
        xy = [
            (_scale(x, x0, x1, PAD, W - 10), _scale(y, 0.0, y1, H - PAD, 24)) for x, y in sorted(s)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        body.append(f'<polyline fill="none" stroke="{color(k)}" points="{path}"/>')
        body += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color(k)}">'
            f"<title>{escape(name)}</title></circle>"
            for x, y in xy
        ]
    return _frame(title, xlabel, ylabel, body + _legend(list(series)))


def histogram(title: str, series: dict[str, list[tuple[float, int]]], xlabel: str) -> str:
    """Overlaid step outlines of (bucket lower edge, count) per series, as fractions."""
    norm = {}
    for name, s in series.items():
        total = sum(c for _, c in s) or 1
        norm[name] = [(x, c / total) for x, c in s]
    return line_chart(title, norm, xlabel, "fraction of deliveries")


def strip_chart(title: str, groups: dict[str, list[float]], ylabel: str) -> str:
    """One column of points per group with its median marked: a distribution at a glance."""
    vals = [v for g in groups.values() for v in g]
    if not vals:
        return _frame(title, "", ylabel, ['<text x="60" y="60">no data</text>'])
    y1 = max(vals) or 1.0
    n = len(groups)
    body = _axes(0, 0, 0.0, y1)[:2]
    for k in range(5):
        py = (H - PAD) - (H - PAD - 24) * k / 4
        body.append(f'<text x="{PAD - 4}" y="{py + 4}" text-anchor="end">{_fmt(y1 * k / 4)}</text>')
    step = (W - 10 - PAD) / max(n, 1)
    # labels wider than their column (about 5 px a character at 9 px) alternate
    # between two lines, so that neighbours do not overlap
    crowded = max(len(name) for name in groups) * 5 > step
    for k, (name, g) in enumerate(groups.items()):
        cx = PAD + step * (k + 0.5)
        for j, v in enumerate(g):
            jitter = ((j * 7919) % 21 - 10) * step / 60
            cy = _scale(v, 0.0, y1, H - PAD, 24)
            body.append(
                f'<circle cx="{cx + jitter:.1f}" cy="{cy:.1f}" r="2" fill="{color(k)}" '
                f'fill-opacity="0.6"/>'
            )
        if g:
            med = sorted(g)[len(g) // 2]
            my = _scale(med, 0.0, y1, H - PAD, 24)
            body.append(
                f'<line x1="{cx - step / 4:.1f}" x2="{cx + step / 4:.1f}" y1="{my:.1f}" '
                f'y2="{my:.1f}" stroke="#000" stroke-width="2"/>'
            )
        ly = H - PAD + 14 + (11 if crowded and k % 2 else 0)
        body.append(
            f'<text x="{cx:.1f}" y="{ly}" text-anchor="middle" font-size="9">{escape(name)}</text>'
        )
    return _frame(title, "", ylabel, body)


def timeline(title: str, rows: list[dict[str, object]]) -> str:
    """Views per node over time: one lane per node, a segment per configuration, faults
    as red ticks."""
    nodes = sorted({str(r["node"]) for r in rows})
    if not nodes:
        return _frame(title, "time (s)", "", ['<text x="60" y="60">no data</text>'])
    tmax = max(int(r["t"]) for r in rows) or 1  # type: ignore[call-overload]
    lane = 22
    h = 60 + lane * len(nodes)
    views = sorted({str(r["view"]) for r in rows if r["kind"] == "view"})
    body: list[str] = []
    for k, n in enumerate(nodes):
        y = 30 + lane * k
        body.append(f'<text x="{PAD - 4}" y="{y + 12}" text-anchor="end">{escape(n)}</text>')
        mine = [r for r in rows if r["node"] == n]
        for j, r in enumerate(mine):
            x = _scale(int(r["t"]), 0, tmax, PAD, W - 10)  # type: ignore[call-overload]
            if r["kind"] == "fault":
                body.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + 16}" stroke="red" '
                    f'stroke-width="2"><title>{escape(str(r["action"]))}</title></line>'
                )
                continue
            nxt = next((m for m in mine[j + 1 :] if m["kind"] == "view"), None)
            crash = next(
                (m for m in mine[j + 1 :] if m["kind"] == "fault" and m["action"] == "crash"),
                None,
            )
            ends = [int(m["t"]) for m in (nxt, crash) if m is not None]  # type: ignore[call-overload]
            x2 = _scale(min(ends) if ends else tmax, 0, tmax, PAD, W - 10)
            members = "+".join(r["members"] or [])  # type: ignore[arg-type]
            opacity = "0.45" if r["transitional"] else "0.85"
            body.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{max(x2 - x, 1):.1f}" height="12" '
                f'fill="{color(views.index(str(r["view"])))}" fill-opacity="{opacity}">'
                f"<title>{escape(str(r['view']))}: {escape(members)} at "
                f"{int(r['t']) / 1e9:.3f}s</title></rect>"  # type: ignore[call-overload]
            )
    body.append(f'<text x="{PAD}" y="{h - 20}">0</text>')
    body.append(f'<text x="{W - 10}" y="{h - 20}" text-anchor="end">{tmax / 1e9:.3g}</text>')
    return _frame(title, "time (s)", "", body, h=h)
