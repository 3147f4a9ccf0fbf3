"""The lab's report: one self-contained HTML file, interactive, readable offline.

The charts are Plotly figures (``ringcast.lab.charts``) with plotly.js inlined once in
the page's head, so the file opens without a network. From the top: the verdict and
the sweep; the safety properties with each counterexample linked to its run's
space-time diagram (``timelines/``, the offending events highlighted); latency CDFs;
throughput and cost against group size; convergence after each fault action; the runs
with their diagrams; and the tables behind the charts, collapsed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from ringcast.lab import charts

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1280px;color:#222;
padding:0 1em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.holds{color:#1a7f37}.violated{color:#c00;font-weight:bold}
.na{color:#888}.expected{color:#9a6700;font-weight:bold}
code{font-size:12px;background:#f6f6f6;padding:0 3px}
h2{margin-top:1.8em;border-bottom:1px solid #eee;padding-bottom:.2em}
.verdict{display:inline-block;padding:.2em .7em;border-radius:4px;color:#fff}
.verdict.ok{background:#1a7f37}.verdict.bad{background:#c00}
.cx{border-left:4px solid #c00;background:#fff6f6;padding:.4em .8em;margin:.5em 0}
.cx.expected{border-left-color:#d4a72c;background:#fffbea}
.warning{color:#9a6700}
.chart{margin:1em 0}details{margin:.6em 0}summary{cursor:pointer;color:#0550ae}
.note{color:#555;font-size:13px}a.diagram{white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
"""
LATENCY_COLUMNS = [
    "protocol",
    "scenario",
    "point",
    "order",
    "deliveries",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
]
GROUP_COLUMNS = [
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
]
CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, list | tuple):
        return ", ".join(_fmt(x) for x in v)
    return str(v)


def _table(rows: list[dict[str, Any]], cols: list[str], raw: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = "".join(
            f"<td>{r.get(c, '') if c in raw else escape(_fmt(r.get(c)))}</td>" for c in cols
        )
        body.append(f"<tr>{cells}</tr>")
    # a wide table scrolls inside its own box, not the page
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(body)}</table></div>'


def _collapsed(title: str, inner: str) -> str:
    return f"<details><summary>{escape(title)}</summary>{inner}</details>"


def _chart(fig: dict[str, Any] | None, div_id: str, empty: str) -> str:
    if fig is None:
        return f"<p class='note'>{escape(empty)}</p>"
    import plotly.io as pio

    html = pio.to_html(
        fig,
        config=CONFIG,
        include_plotlyjs=False,
        full_html=False,
        validate=False,
        div_id=div_id,
        default_height=f"{fig['layout'].get('height', 450)}px",
    )
    return f"<div class='chart'>{html}</div>"


def counterexample_id(prop: str, k: int) -> str:
    """The anchor of counterexample ``k`` of property ``prop`` (report and diagram)."""
    return f"{prop}-{k + 1}"


def _link(run: str, timelines: Mapping[str, str], anchor: str = "", out_dir: str = "OUT") -> str:
    if run in timelines:
        href = escape(timelines[run] + (f"#{anchor}" if anchor else ""), quote=True)
        return f"<a class='diagram' href='{href}'>space-time diagram</a>"
    return (
        f"<span class='note'>diagram: <code>ringcast lab timeline {escape(out_dir)} "
        f"--run '{escape(run)}'</code></span>"
    )


STATUS_CLASS = {"holds": "holds", "violated": "violated", "violated as expected": "expected"}


def _where_label(e: dict[str, Any]) -> str:
    at = ",".join(f"{k}={v}" for k, v in e.get("where", {}).items())
    return f"{e['protocol']} at {at}" if at else str(e["protocol"])


def _per_protocol(p: dict[str, Any]) -> str:
    parts = []
    for proto, e in sorted(p.get("protocols", {}).items()):
        if not e["claimed"]:
            parts.append(f"{proto}: not claimed")
            continue
        text = f"{proto}: {e['runs_checked']} checked, {e['violations']} violations"
        if e.get("expected_violations"):
            text += f", {e['expected_violations']} expected"
        parts.append(text)
    return "; ".join(parts)


def _expectations(check: dict[str, Any]) -> str:
    """The violations the sweep declared expected, each with its reason and the runs
    that violated it, then a warning for each that no run fulfilled."""
    expectations = check.get("expectations") or []
    if not expectations:
        return ""
    out = ["<h3 id='expected'>Expected violations (declared in the sweep file)</h3><ul>"]
    for e in expectations:
        runs = ", ".join(
            f"{escape(prop)} in {n} runs" if n else f"{escape(prop)}: <b>not violated</b>"
            for prop, n in e.get("runs_violated", {}).items()
        )
        out.append(
            f"<li><b>{escape(_where_label(e))}</b> may violate "
            f"{escape(', '.join(e['violates']))}: {escape(e['why'])} "
            f"<span class='note'>({runs})</span></li>"
        )
    out.append("</ul>")
    for w in check.get("warnings") or []:
        out.append(f"<p class='warning'>Warning: {escape(w)}</p>")
    return "".join(out)


def _properties(check: dict[str, Any], timelines: Mapping[str, str], out_dir: str) -> str:
    props = check.get("properties", {})
    expected = any(p.get("runs_expected") for p in props.values())
    extra = "<th>runs expected</th><th>expected violations</th>" if expected else ""
    out = [
        '<div class="scroll"><table><tr><th>property</th><th>status</th><th>runs checked</th>'
        f"<th>runs violated</th><th>violations</th>{extra}<th>per protocol</th></tr>"
    ]
    for name, p in props.items():
        cls = STATUS_CLASS.get(p["status"], "na")
        label = (
            f"<a href='#cx-{escape(name)}'>{escape(name)}</a>"
            if p.get("counterexamples")
            else escape(name)
        )
        cells = (
            f"<td>{p.get('runs_expected', 0)}</td><td>{p.get('expected_violations', 0)}</td>"
            if expected
            else ""
        )
        out.append(
            f"<tr><td>{label}</td><td class='{cls}'>{escape(p['status'])}</td>"
            f"<td>{p['runs_checked']}</td><td>{p.get('runs_violated', 0)}</td>"
            f"<td>{p['violations']}</td>{cells}<td>{escape(_per_protocol(p))}</td></tr>"
        )
    out.append("</table></div>")
    out.append(_expectations(check))
    whys = [e.get("why", "") for e in check.get("expectations") or []]
    for name, p in props.items():
        if not p.get("counterexamples"):
            continue
        heading = f"{escape(name)}: counterexamples"
        if p["status"] == "violated as expected":
            heading += " <span class='expected'>(expected)</span>"
        out.append(f"<h3 id='cx-{escape(name)}'>{heading}</h3>")
        for k, c in enumerate(p["counterexamples"]):
            anchor = counterexample_id(name, k)
            facts = []
            if c.get("t") is not None:
                facts.append(f"t = {c['t'] / 1e6:.3f} ms")
            for key, label in (("nodes", "nodes"), ("msgs", "messages"), ("views", "views")):
                vals = [v for v in c.get(key) or [] if v is not None]
                if vals:
                    facts.append(f"{label} {', '.join(map(str, vals))}")
            if c.get("times"):
                facts.append("at " + ", ".join(f"{x / 1e6:.3f}" for x in c["times"][:8]) + " ms")
            why = ""
            if c.get("expected"):
                k_why = c.get("expect")
                reason = whys[k_why] if isinstance(k_why, int) and k_why < len(whys) else ""
                why = f"<br><span class='expected'>expected</span>: {escape(reason)}"
            out.append(
                f"<div class='cx{' expected' if c.get('expected') else ''}' "
                f"id='{escape(anchor)}'><b>#{k + 1}</b> "
                f"{escape(str(c.get('note') or ''))}{why}<br><span class='note'>run "
                f"<code>{escape(str(c['run']))}</code> ({escape(str(c.get('protocol')))}); "
                f"{escape('; '.join(facts))}</span><br>"
                f"{_link(str(c['run']), timelines, anchor, out_dir)}</div>"
            )
    return "".join(out)


def _sweep(sweep: dict[str, Any]) -> str:
    skipped = sweep.get("skipped") or []
    return (
        f"<p>Sweep <b>{escape(str(sweep.get('name')))}</b>: {sweep.get('runs')} runs of "
        f"{escape(', '.join(sweep.get('protocols', [])))} over "
        f"{len(sweep.get('scenarios', []))} scenarios, seeds {escape(str(sweep.get('seeds')))}"
        f", grid <code>{escape(json.dumps(sweep.get('grid')))}</code>; simulated in "
        f"{sweep.get('wall_s')} s ({sweep.get('runs_per_second')} runs/s)."
        + (
            f" {len(skipped)} grid points were skipped (a scenario that cannot take the "
            "size; listed in <code>sweep.json</code>)."
            if skipped
            else ""
        )
        + "</p>"
    )


def _where(where: dict[str, Any]) -> str:
    """One line saying where the sweep and the checks ran (``where.json``)."""
    ran = [
        f"{phase} on {escape(str(where[phase].get('line')))}"
        for phase in ("sweep", "checks")
        if isinstance(where.get(phase), dict)
    ]
    return f"<p class='where'>Ran: {'; '.join(ran)}.</p>" if ran else ""


def _runs(
    metrics: dict[str, Any], check: dict[str, Any], timelines: Mapping[str, str], out_dir: str
) -> str:
    bad: dict[str, list[str]] = {}
    for name, p in check.get("properties", {}).items():
        for c in p.get("counterexamples") or []:
            label = f"{name} (expected)" if c.get("expected") else name
            bad.setdefault(str(c["run"]), []).append(label)
    runs = metrics.get("runs") or []
    known = {str(r["run"]) for r in runs}
    rows = [
        {
            **r,
            "violations": ", ".join(sorted(set(bad.get(str(r["run"]), [])))),
            "diagram": _link(str(r["run"]), timelines, "", out_dir),
        }
        for r in sorted(runs, key=lambda r: (str(r["run"]) not in bad, str(r["run"])))
    ]
    rows += [
        {"run": run, "diagram": _link(run, timelines, "", out_dir)}
        for run in sorted(set(timelines) - known)
    ]
    drawn = [r for r in rows if str(r["run"]) in timelines]
    cols = ["run", "protocol", "scenario", "point", "seed", "nodes", "faults", "violations"]
    text = [
        f"<p class='note'>{len(drawn)} of {len(rows)} runs have their space-time diagram "
        "drawn (the runs with counterexamples and a sample of the others: one lane per "
        "node, configurations as bands, faults as spans, messages and token passes as "
        "arrows, deliveries as ticks). Any other run's is one command away.</p>",
        _table(drawn, [*cols, "diagram"], raw={"diagram"}),
    ]
    if len(rows) > len(drawn):
        text.append(
            _collapsed(f"all {len(rows)} runs", _table(rows, [*cols, "diagram"], {"diagram"}))
        )
    return "".join(text)


def _verdict(check: dict[str, Any]) -> str:
    """Every property holds; no unexpected violation (only the declared ones); or
    violations found."""
    ok = check.get("ok")
    expected = [
        n for n, p in check.get("properties", {}).items() if p["status"] == "violated as expected"
    ]
    if ok and expected:
        text = "no unexpected violation"
        note = (
            f" <span class='note'>{escape(', '.join(expected))} violated as expected "
            "(<a href='#expected'>declared in the sweep file</a>)</span>"
        )
    else:
        text, note = ("every property holds" if ok else "violations found"), ""
    warned = len(check.get("warnings") or [])
    if warned:
        note += (
            f" <span class='warning'>{warned} expected violation"
            f"{'s' if warned > 1 else ''} did not happen</span>"
        )
    return f"<p><span class='verdict {'ok' if ok else 'bad'}'>{text}</span>{note}</p>"


def _cell(v: Any, differs: bool) -> str:
    text = escape(_fmt(v)) if v is not None else "<span class='na'>-</span>"
    return f"<td class='violated'>{text}</td>" if differs else f"<td>{text}</td>"


SIDE_NAMES = {"sim": "simulated", "live": "live"}


def _side_name(side: str, sides: list[str]) -> str:
    if side == "live" and any(s not in SIDE_NAMES for s in sides):
        return "ringcast (live)"
    return SIDE_NAMES.get(side, side)


def twins_title(doc: dict[str, Any]) -> str:
    """The side by side's heading: its two sides by name."""
    a, b = (_side_name(s, doc["sides"]) for s in doc["sides"])
    return f"{a[:1].upper()}{a[1:]} and {b}, side by side"


def _twins(doc: dict[str, Any]) -> str:
    """A side by side of two outputs of the same runs (:mod:`ringcast.lab.twins`):
    simulated and live, or ringcast's nodes and a reference system's."""
    pairs = doc.get("pairs") or []
    first, second = doc["sides"]
    names = [_side_name(s, doc["sides"]) for s in doc["sides"]]
    what = (
        "simulated and on real processes"
        if set(doc["sides"]) == {"sim", "live"}
        else f"on real processes, by ringcast's nodes and by {second}'s"
    )
    text = [
        f"<p class='note'>The same runs (scenario, point, seed) {what}: each property's "
        "verdict and the main measures; in red where the verdicts differ or a measure "
        f"differs by more than {_fmt(doc.get('factor'))}x (or is zero on one side "
        "only).</p>"
    ]
    if not pairs:
        text.append("<p class='note'>no run is in both outputs</p>")
    for p in pairs:
        flagged = p["differs"]
        head = f"{p['run']} ({' / '.join(dict.fromkeys((p.get('protocols') or {}).values()))})"
        if not p.get("protocols"):
            head = f"{p['run']} ({p['protocol']})"
        note = (
            f" <span class='violated'>differs: {escape(', '.join(flagged))}</span>"
            if flagged
            else " <span class='holds'>agrees</span>"
        )
        rows = [
            f"<tr><th></th><th>{escape(names[0])}</th><th>{escape(names[1])}</th>"
            f"<th>{escape(names[1])} / {escape(names[0])}</th></tr>"
        ]
        for name, v in p["verdicts"].items():
            if v[first] == v[second] == "n/a":
                continue
            rows.append(
                f"<tr><td>{escape(name)}</td>{_cell(v[first], v['differs'])}"
                f"{_cell(v[second], v['differs'])}<td></td></tr>"
            )
        for m in p["measures"].values():
            if m[first] is None and m[second] is None:
                continue
            rows.append(
                f"<tr><td>{escape(m['label'])}</td>{_cell(m[first], m['differs'])}"
                f"{_cell(m[second], m['differs'])}{_cell(m['ratio'], m['differs'])}</tr>"
            )
        text.append(
            f"<h3>{escape(head)}{note}</h3><div class='scroll'><table>{''.join(rows)}</table></div>"
        )
    for side, name in zip(doc["sides"], names, strict=True):
        if doc.get(f"only_{side}"):
            text.append(
                f"<p class='note'>{len(doc[f'only_{side}'])} {escape(name)} runs have no "
                f"twin: {escape(', '.join(doc[f'only_{side}'][:10]))}</p>"
            )
    return "".join(text)


def render_report(
    check: dict[str, Any],
    metrics: dict[str, Any],
    sweep: dict[str, Any] | None = None,
    where: dict[str, Any] | None = None,
    *,
    timelines: Mapping[str, str] | None = None,
    out_dir: str = "OUT",
    twins: dict[str, Any] | None = None,
) -> str:
    """The HTML text of the report for ``check.json``, ``metrics.json`` (and
    ``sweep.json``, and ``where.json``: where the sweep and the checks ran).
    ``timelines`` maps a run to the address of its space-time diagram (relative to the
    report); ``out_dir`` is the directory named in the command that draws the diagram
    of another run; ``twins``, the side by side of simulated and live runs
    (:func:`ringcast.lab.twins.compare`)."""
    from plotly.offline import get_plotlyjs

    timelines = timelines or {}
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>ringcast lab report</title>",
        f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>",
        "<h1>ringcast lab report</h1>",
        _verdict(check),
    ]
    if sweep:
        parts.append(_sweep(sweep))
    if where:
        parts.append(_where(where))
    if twins is not None:
        parts.append(f"<h2 id='twins'>{escape(twins_title(twins))}</h2>")
        parts.append(_twins(twins))
    parts.append("<h2 id='properties'>Safety properties</h2>")
    parts.append(_properties(check, timelines, out_dir))

    parts.append("<h2 id='latency'>Latency</h2>")
    parts.append(_chart(charts.latency_cdf(metrics), "chart-latency", "no deliveries"))
    parts.append(
        _collapsed(
            "latency table (per protocol, scenario, point and order)",
            _table(
                metrics.get("latency", []),
                LATENCY_COLUMNS,
            ),
        )
    )
    parts.append("<h2 id='throughput'>Throughput and cost</h2>")
    parts.append(_chart(charts.throughput(metrics), "chart-throughput", "no runs measured"))
    parts.append(
        _collapsed(
            "throughput and cost table (per protocol, scenario and point)",
            _table(
                metrics.get("groups", []),
                GROUP_COLUMNS,
            ),
        )
    )
    parts.append("<h2 id='convergence'>Convergence after faults</h2>")
    conv = metrics.get("convergence", [])
    parts.append(
        _chart(charts.convergence(metrics), "chart-convergence", "no faults in these runs")
    )
    parts.append(
        _collapsed(
            "convergence table (per protocol and fault action)",
            _table(
                conv,
                ["protocol", "action", "faults", "no_view_change", "p50_ms", "p95_ms", "max_ms"],
            ),
        )
    )
    parts.append("<h2 id='runs'>Runs and their space-time diagrams</h2>")
    parts.append(_runs(metrics, check, timelines, out_dir))
    parts.append("</body></html>\n")
    return "".join(parts)
