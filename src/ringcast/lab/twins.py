"""Two outputs of the same runs side by side: the simulator and real processes (the
same runs, scenario, point and seed, so the same run id, simulated and live), or
ringcast's nodes and a reference system's on real processes (``ringcast live --system``:
the same run ids), compared property by property and on the main measures.

For each run both outputs hold, from their ``check.json`` and ``metrics.json``:

* each property's verdict in the run: ``violated`` (the run is among the property's
  ``violated_runs``), ``holds`` (the property was checked on the protocol's runs) or
  ``n/a``;
* the measures of :data:`MEASURES`: the convergence after a crash (the survivors'
  view: the time to detect it), after a heal (one view again), after a network going
  down (the redundant ring's failover) and after a restart, each the median over the
  run's faults of that kind; deliveries a second; messages submitted that no node
  delivered.

A verdict that differs, or a measure whose second side's value is more than
:data:`FACTOR` times the first's or less than its 1/:data:`FACTOR` (or zero on one side
only), is flagged. Between ringcast and a reference, which claim different properties, a
property one side does not check (``n/a``) is not a difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ringcast.lab.errors import LabError

FACTOR = 2.0
"""A measure differs when one side exceeds the other by more than this factor."""

MEASURES: tuple[tuple[str, str, str | None], ...] = (
    ("crash_ms", "crash to the survivors' view (detection), ms", "crash"),
    ("heal_ms", "heal to one view, ms", "heal"),
    ("failover_ms", "network down to the failover's view, ms", "link_down"),
    ("restart_ms", "restart to its view, ms", "restart"),
    ("deliveries_per_s", "deliveries a second", None),
    ("undelivered", "messages submitted and never delivered", None),
)
"""(key, label, fault action whose convergence it is; None: a per-run measure)."""

SIM, LIVE = "sim", "live"


def _output_doc(directory: Path) -> dict[str, Any]:
    """The output's ``sweep.json`` or, for a single run, ``summary.json`` (empty if it
    has neither)."""
    for name in ("sweep.json", "summary.json"):
        f = directory / name
        if f.is_file():
            try:
                doc = json.loads(f.read_text())
            except (OSError, ValueError) as e:
                raise LabError(f"{f}: not readable JSON ({e})") from None
            return doc if isinstance(doc, dict) else {}
    return {}


def mode_of(directory: Path) -> str:
    """``live`` when ``directory`` is a live run's or a live sweep's output (its
    ``summary.json`` or ``sweep.json`` says ``mode = "live"``), else ``sim``."""
    return LIVE if _output_doc(directory).get("mode") == LIVE else SIM


def side_of(directory: Path) -> str:
    """The side ``directory`` is in a side by side: a reference system's name for a live
    run of one (its ``summary.json`` or ``sweep.json`` names the ``system``), else
    :func:`mode_of`."""
    doc = _output_doc(directory)
    system = doc.get("system")
    if isinstance(system, str) and system != "ringcast":
        return system
    return LIVE if doc.get("mode") == LIVE else SIM


def _verdict(prop: dict[str, Any], run: str, protocol: str) -> str:
    violated = prop.get("violated_runs")
    if violated is None:  # a check.json written before the list: its counterexamples
        violated = [c.get("run") for c in prop.get("counterexamples") or []]
    if run in violated:
        return "violated"
    entry = (prop.get("protocols") or {}).get(protocol) or {}
    return "holds" if entry.get("runs_checked") else "n/a"


def _measures(metrics: dict[str, Any], run: dict[str, Any]) -> dict[str, float | None]:
    conv = {
        c["action"]: c["p50_ms"]
        for c in metrics.get("run_convergence") or []
        if c["run"] == run["run"]
    }
    out: dict[str, float | None] = {}
    for key, _, action in MEASURES:
        out[key] = conv.get(action) if action is not None else run.get(key)
    return out


def _seed(run: str) -> int | None:
    """The seed a run id ends with (``scenario[@point]:seed``), for a single run's output
    (which has no run table)."""
    tail = run.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    lo, hi = sorted((abs(a), abs(b)))
    if hi == 0:
        return False
    return lo == 0 or hi / lo > FACTOR


def order(sides: list[str]) -> tuple[str, str]:
    """The two sides as the report shows them: simulated before live, ringcast's live
    run before a reference's."""
    if len(set(sides)) != 2:
        raise LabError(f"a side by side needs two outputs of different kinds, got {sides}")
    a, b = sides
    if a in (SIM, LIVE) and b in (SIM, LIVE):
        return (SIM, LIVE)
    if b == LIVE:  # a reference first: ringcast's live run goes first
        return (b, a)
    if a == LIVE:
        return (a, b)
    raise LabError(
        f"a side by side of {a} and {b}: give a simulated and a live output, or a live "
        "run of ringcast and one of a reference system"
    )


def compare(sides: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Pair the runs of ``sides`` (two of ``{"sim": (check, metrics), "live": ...,
    "<reference>": ...}``) by run id and compare them; the document the report shows
    (each side's values under its name; ``sides`` the two names in order)."""
    first, second = order(list(sides))
    runs = {m: {r["run"]: r for r in sides[m][1].get("runs") or []} for m in sides}
    common = sorted(set(runs[first]) & set(runs[second]))
    props = sorted(
        set(sides[first][0].get("properties", {})) & set(sides[second][0].get("properties", {}))
    )
    pairs = []
    for run in common:
        r = {m: runs[m][run] for m in (first, second)}
        protocols = {m: r[m]["protocol"] for m in r}
        verdicts = {}
        flagged = []
        for p in props:
            v = {m: _verdict(sides[m][0]["properties"][p], run, protocols[m]) for m in r}
            differs = v[first] != v[second] and (
                protocols[first] == protocols[second] or "n/a" not in v.values()
            )
            verdicts[p] = {**v, "differs": differs}
            if differs:
                flagged.append(p)
        ms = {m: _measures(sides[m][1], r[m]) for m in r}
        measures = {}
        for key, label, _ in MEASURES:
            a, b = ms[first][key], ms[second][key]
            ratio = round(b / a, 2) if a and b is not None else None
            differs = _differs(a, b)
            measures[key] = {
                "label": label,
                first: a,
                second: b,
                "ratio": ratio,
                "differs": differs,
            }
            if differs:
                flagged.append(key)
        s_run = r[first]
        pairs.append(
            {
                "run": run,
                "protocol": protocols[first],
                "protocols": protocols,
                "scenario": s_run["scenario"],
                "seed": s_run.get("seed") if s_run.get("seed") is not None else _seed(run),
                "verdicts": verdicts,
                "measures": measures,
                "differs": flagged,
            }
        )
    return {
        "factor": FACTOR,
        "sides": [first, second],
        "pairs": pairs,
        f"only_{first}": sorted(set(runs[first]) - set(runs[second])),
        f"only_{second}": sorted(set(runs[second]) - set(runs[first])),
    }
