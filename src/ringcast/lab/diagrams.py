"""Which runs of a lab output get their space-time diagram drawn with the report.

Every run with a counterexample (up to :data:`MAX_FAILING`), with the offending events
highlighted, and a sample of the others: per protocol and scenario the first run that
saw a fault (else its first run), taken round-robin by protocol so that every protocol
gets a diagram, up to :data:`MAX_SAMPLE` and while the diagrams written stay under
:data:`BUDGET_BYTES`. They go to ``timelines/`` beside the report,
sharing one copy of plotly.js there; any other run's diagram is drawn on demand by
``ringcast lab timeline OUT --run RUN``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ringcast.lab.report import counterexample_id
from ringcast.lab.spacetime import Highlight, figure, read_runs, run_file_name, to_html

TIMELINES_DIR = "timelines"
PLOTLY_JS = "plotly.min.js"
MAX_FAILING = 20
MAX_SAMPLE = 24
BUDGET_BYTES = 30_000_000


def highlights(check: Mapping[str, Any]) -> dict[str, list[Highlight]]:
    """The counterexamples of ``check.json`` per run, as highlights."""
    out: dict[str, list[Highlight]] = {}
    for name, p in check.get("properties", {}).items():
        for k, c in enumerate(p.get("counterexamples") or []):
            ident = counterexample_id(name, k)
            out.setdefault(str(c["run"]), []).append(Highlight.of(ident, f"{name} #{k + 1}", c))
    return out


def sample(metrics: Mapping[str, Any]) -> list[str]:
    """Per (protocol, scenario) the first run with a fault, else the first run; taken
    round-robin by protocol (each protocol's first scenario, then each one's second,
    ...) so that a cut at :data:`MAX_SAMPLE` leaves every protocol some diagram."""
    chosen: dict[tuple[str, str], tuple[bool, str]] = {}
    for r in metrics.get("runs") or []:
        key = (str(r.get("protocol")), str(r.get("scenario")))
        rank = (r.get("faults") in (None, "none"), str(r["run"]))
        if key not in chosen or rank < chosen[key]:
            chosen[key] = rank
    per_protocol: dict[str, list[str]] = {}
    for (protocol, _), (_, run) in sorted(chosen.items(), key=lambda kv: kv[1][1]):
        per_protocol.setdefault(protocol, []).append(run)
    queues = [per_protocol[p] for p in sorted(per_protocol)]
    return [q[k] for k in range(max(map(len, queues), default=0)) for q in queues if k < len(q)]


def draw(
    source: Path, dest: Path, check: Mapping[str, Any], metrics: Mapping[str, Any]
) -> dict[str, str]:
    """Write the diagrams of :func:`highlights`' runs and of :func:`sample` (traces read
    from ``source``) under ``dest/timelines``; per run, its address relative to
    ``dest``."""
    from plotly.offline import get_plotlyjs

    target = dest / TIMELINES_DIR
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.html"):
        old.unlink()
    (target / PLOTLY_JS).write_text(get_plotlyjs())
    marks = highlights(check)
    protocols = {str(r["run"]): r.get("protocol") for r in metrics.get("runs") or []}
    failing = list(marks)[:MAX_FAILING]
    rest = [r for r in sample(metrics) if r not in marks][:MAX_SAMPLE]
    written: dict[str, str] = {}
    used = 0
    tables = read_runs(source, failing + rest)  # one scan for all of them
    for run in failing + rest:
        if run not in marks and used > BUDGET_BYTES:
            break
        if run not in tables:  # not among these traces: the report gives the command
            continue
        table, found = tables[run]
        fig = figure(
            table, run=run, protocol=protocols.get(run) or found, highlights=marks.get(run, ())
        )
        name = run_file_name(run)
        html = to_html(fig, include_plotlyjs=PLOTLY_JS)
        (target / name).write_text(html)
        used += len(html)
        written[run] = f"{TIMELINES_DIR}/{name}"
    return written
