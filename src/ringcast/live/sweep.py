"""A sweep of live runs: a sweep file with ``live = true`` (or ``[live]``: ``sample``,
``real_latency``) runs its runs on real processes, one after another (a live run takes
the machine's cores; two at once would measure each other), and lays out its output as a
simulated sweep's: ``traces/protocol=P/scenario=S/<run>.parquet``, ``runs.parquet`` and
``sweep.json``, so ``lab check``, ``lab metrics`` and ``lab report`` read it unchanged.

A run the live nemesis refuses (``ringcast.live.plan``) is not run: it is listed in
``sweep.json``'s ``skipped`` with the reason, as the simulator's sweep lists the grid
points it cannot build; what refuses every run (not root, a tool missing) is a
``LabError`` in one line. Each run's ``summary.json`` and node logs stay under
``_live/<k>/`` (skipped by the lab's readers).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ringcast.lab.errors import LabError
from ringcast.lab.grid import RunSpec, Sweep
from ringcast.lab.load import RUNS_FILE, TRACES_DIR
from ringcast.live.driver import WORK, run_live
from ringcast.live.tools import LiveError, ensure_tools, require_root
from ringcast.sim.scenario import ScenarioError, parse_scenario


def sample_runs(sweep: Sweep) -> list[RunSpec]:
    """The runs a live sweep runs: all, or ``sample`` of them drawn by the sweep's name
    (the same draw every time), in the sweep's order."""
    assert sweep.live is not None
    runs = sweep.runs
    k = sweep.live.sample
    if k is None or k >= len(runs):
        return list(runs)
    chosen = set(random.Random(sweep.name).sample(range(len(runs)), k))
    return [r for i, r in enumerate(runs) if i in chosen]


def _part_name(run: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run) + ".parquet"


def run_live_sweep(
    sweep: Sweep,
    out: Path,
    *,
    progress: Callable[[float, str], None] | None = None,
) -> dict[str, Any]:
    """Run ``sweep``'s (sampled) runs live; write the sweep's output under ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert sweep.live is not None
    try:  # what refuses every run refuses the sweep, in one line
        require_root()
        ensure_tools(("ip", "nft"))
    except LiveError as e:
        raise LabError(f"{sweep.source}: live: {e}") from None
    runs = sample_runs(sweep)
    traces = out / TRACES_DIR
    if traces.exists():
        shutil.rmtree(traces)
    work = out / WORK
    if work.exists():
        shutil.rmtree(work)
    done: list[RunSpec] = []
    skipped = list(sweep.skipped)
    findings = 0
    t0 = time.perf_counter()
    for k, spec in enumerate(runs):
        if progress is not None:
            progress(k / len(runs), f"{k}/{len(runs)} live runs")
        try:
            sc = parse_scenario(sweep.documents[spec.scenario_index], spec.scenario)
            run_dir = work / str(k)
            result = run_live(
                sc, spec.seed, run_dir, real_latency=sweep.live.real_latency, run_id=spec.run
            )
        except (LiveError, ScenarioError) as e:
            skipped.append(f"{spec.run}: {e}")
            continue
        findings += len(result.summary["findings"])
        part = traces / f"protocol={spec.protocol}" / f"scenario={spec.scenario}"
        part.mkdir(parents=True, exist_ok=True)
        shutil.move(run_dir / "trace.parquet", part / _part_name(spec.run))
        shutil.rmtree(run_dir / WORK)  # the raw segments and state: merged already
        done.append(spec)
    wall = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, f"{len(runs)}/{len(runs)} live runs")
    if not done:
        first = skipped[-1] if skipped else "no runs"
        raise LabError(f"{sweep.source}: no live run could run ({first})")
    table = pa.Table.from_pylist([asdict(r) for r in done]).drop_columns(["scenario_index"])
    pq.write_table(table, out / RUNS_FILE)
    summary = {
        "name": sweep.name,
        "source": sweep.source,
        "mode": "live",
        "runs": len(done),
        "partitions": 1,
        "wall_s": round(wall, 3),
        "runs_per_second": round(len(done) / wall, 4) if wall > 0 else None,
        "protocols": sorted({r.protocol for r in done}),
        "scenarios": sorted({r.scenario for r in done}),
        "grid": sweep.grid,
        "seeds": sweep.seeds,
        "skipped": skipped,
        "expect": [e.as_dict() for e in sweep.expect],
        "live": {
            "sample": sweep.live.sample,
            "real_latency": sweep.live.real_latency,
            "of_runs": len(sweep.runs),
            "findings": findings,
        },
    }
    (out / "sweep.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary
