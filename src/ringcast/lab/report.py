"""The lab's report: one self-contained HTML file (inline SVG, no scripts, no links)."""

from __future__ import annotations

from html import escape
from typing import Any

from ringcast.lab import svg

CSS = """
body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0}.holds{color:#1a7f37}.violated{color:#c00;font-weight:bold}
.na{color:#888}code{font-size:12px}h2{margin-top:1.6em}
"""


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            if isinstance(v, float):
                v = f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
            cells.append(f"<td>{escape('' if v is None else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _properties(check: dict[str, Any]) -> str:
    out = [
        "<table><tr><th>property</th><th>status</th><th>runs checked</th>"
        "<th>runs violated</th><th>violations</th><th>per protocol</th></tr>"
    ]
    for name, p in check.get("properties", {}).items():
        cls = {"holds": "holds", "violated": "violated"}.get(p["status"], "na")
        per = "; ".join(
            f"{proto}: {e['runs_checked']} checked, {e['violations']} violations"
            if e["claimed"]
            else f"{proto}: not claimed"
            for proto, e in sorted(p.get("protocols", {}).items())
        )
        out.append(
            f"<tr><td>{escape(name)}</td><td class='{cls}'>{escape(p['status'])}</td>"
            f"<td>{p['runs_checked']}</td><td>{p.get('runs_violated', 0)}</td>"
            f"<td>{p['violations']}</td><td>{escape(per)}</td></tr>"
        )
    out.append("</table>")
    for name, p in check.get("properties", {}).items():
        if not p.get("counterexamples"):
            continue
        out.append(f"<h3>{escape(name)}: counterexamples</h3>")
        rows = [
            {
                "run": c["run"],
                "protocol": c["protocol"],
                "t (ms)": c["t"] / 1e6 if c.get("t") is not None else None,
                "nodes": ",".join(c["nodes"] or []),
                "messages": ",".join(c["msgs"] or []),
                "views": ",".join(v for v in (c["views"] or []) if v is not None),
                "what": c["note"],
            }
            for c in p["counterexamples"]
        ]
        out.append(
            _table(rows, ["run", "protocol", "t (ms)", "nodes", "messages", "views", "what"])
        )
    return "".join(out)


def render_report(
    check: dict[str, Any],
    metrics: dict[str, Any],
    sweep: dict[str, Any] | None = None,
    where: dict[str, Any] | None = None,
) -> str:
    """The HTML text of the report for ``check.json``, ``metrics.json`` (and
    ``sweep.json``, and ``where.json``: where the sweep and the checks ran)."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>ringcast lab report</title>",
        f"<style>{CSS}</style></head><body><h1>ringcast lab report</h1>",
    ]
    if sweep:
        parts.append(
            f"<p>Sweep <b>{escape(str(sweep.get('name')))}</b>: {sweep.get('runs')} runs of "
            f"{escape(', '.join(sweep.get('protocols', [])))} over "
            f"{len(sweep.get('scenarios', []))} scenarios, seeds {escape(str(sweep.get('seeds')))}"
            f", grid <code>{escape(str(sweep.get('grid')))}</code>; simulated in "
            f"{sweep.get('wall_s')} s ({sweep.get('runs_per_second')} runs/s).</p>"
        )
    if where:
        ran = [
            f"{phase} on {escape(str(where[key].get('line')))}"
            for key, phase in (("sweep", "sweep"), ("checks", "checks"))
            if key in where
        ]
        parts.append(f"<p class='where'>Ran: {'; '.join(ran)}.</p>")
    ok = check.get("ok")
    parts.append(
        f"<h2>Safety properties: <span class='{'holds' if ok else 'violated'}'>"
        f"{'all hold' if ok else 'violations found'}</span></h2>"
    )
    parts.append(_properties(check))
    parts.append("<h2>Latency</h2>")
    hist: dict[str, list[tuple[float, int]]] = {}
    for r in metrics.get("latency_histogram", []):
        hist.setdefault(r["protocol"], []).append((10 ** (r["bucket"] / 10) / 1e6, r["count"]))
    parts.append(
        svg.histogram(
            "submit-to-deliver latency distribution", hist, "latency (ms, bucket lower edge)"
        )
    )
    parts.append(
        _table(
            metrics.get("latency", []),
            [
                "protocol",
                "scenario",
                "point",
                "order",
                "deliveries",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
            ],
        )
    )
    parts.append("<h2>Throughput and cost</h2>")
    series: dict[str, dict[int, list[float]]] = {}
    for g in metrics.get("groups", []):
        series.setdefault(g["protocol"], {}).setdefault(int(g["nodes"]), []).append(
            g["messages_per_s"]
        )
    tput = {
        p: [(float(n), sum(v) / len(v)) for n, v in sorted(by.items())] for p, by in series.items()
    }
    parts.append(
        svg.line_chart(
            "delivered messages per second against group size (mean over scenarios)",
            tput,
            "nodes",
            "messages/s",
        )
    )
    parts.append(
        _table(
            metrics.get("groups", []),
            [
                "protocol",
                "scenario",
                "point",
                "nodes",
                "runs",
                "errors",
                "messages_per_s",
                "deliveries_per_s",
                "packets_per_message",
                "bytes_per_message",
                "retransmits_per_message",
                "token_rotation_p50_ms",
                "token_rotation_p95_ms",
            ],
        )
    )
    parts.append("<h2>Convergence after faults</h2>")
    conv = metrics.get("convergence", [])
    parts.append(
        svg.strip_chart(
            "fault to last configuration installed (ms), per protocol and fault",
            {f"{r['protocol']}/{r['action']}": r["samples_ms"] for r in conv},
            "ms",
        )
    )
    parts.append(
        _table(
            conv, ["protocol", "action", "faults", "no_view_change", "p50_ms", "p95_ms", "max_ms"]
        )
    )
    parts.append("<h2>Membership timelines</h2>")
    for run, rows in metrics.get("timelines", {}).items():
        parts.append(svg.timeline(f"views per node: {run}", rows))
    parts.append("</body></html>\n")
    return "".join(parts)
