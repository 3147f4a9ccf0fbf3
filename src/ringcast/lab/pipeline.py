"""The lab's jobs end to end: check, metrics, report, and ``run`` (all of them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ringcast.lab import diagrams
from ringcast.lab import twins as twins_mod
from ringcast.lab.checks.context import JudgedCrash
from ringcast.lab.checks.runner import run_checks, summary_json
from ringcast.lab.errors import LabError
from ringcast.lab.expect import Expectation, expectations_of, expected_runs, outcome
from ringcast.lab.load import load_runs, load_traces
from ringcast.lab.metrics import compute_metrics
from ringcast.lab.report import render_report
from ringcast.lab.session import Where, where

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECK_FILE, METRICS_FILE, SWEEP_FILE, REPORT_FILE, WHERE_FILE = (
    "check.json",
    "metrics.json",
    "sweep.json",
    "report.html",
    "where.json",
)


def record_where(out: Path, phase: str, where: Where) -> None:
    """Say in ``out/where.json`` where ``phase`` (``sweep`` or ``checks``) ran: kept
    apart from ``check.json`` and ``metrics.json``, which are the same wherever they
    were computed."""
    path = Path(out) / WHERE_FILE
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc[phase] = where.as_dict()
    write_json(path, doc)


def check_paths(
    spark: SparkSession,
    paths: Sequence[str | Path],
    *,
    protocol: str | None = None,
    overrides: Mapping[str, Iterable[str]] | None = None,
    properties: Iterable[str] | None = None,
    examples: int = 5,
    convergence_bound: float = 10.0,
    progress_bound: int = 1_000_000_000,
    certify: bool = True,
    expectations: Sequence[Expectation] | None = None,
) -> dict[str, Any]:
    """Check the traces at ``paths``; the ``check.json`` document (``certify``: see
    :func:`~ringcast.lab.checks.run_checks`).

    The violations a sweep output among ``paths`` declares expected (its
    ``sweep.json``, :mod:`ringcast.lab.expect`) are told apart from the others, and the
    document lists the ``expectations`` and a warning for each that no run fulfilled.
    ``expectations`` replaces those of the sweep files (over the run tables of
    ``paths``; ``[]``: expect nothing)."""
    trace = load_traces(spark, paths, protocol=protocol)
    if expectations is None:
        expect, expected = expectations_of(spark, paths)
    else:
        expect = list(expectations)
        runs = load_runs(spark, paths)
        expected = (
            expected_runs(runs.select("run", "protocol", "params"), expect)
            if expect and runs is not None
            else None
        )
    judged: list[JudgedCrash] = []
    results = run_checks(
        trace,
        overrides=overrides,
        properties=properties,
        examples=examples,
        convergence_bound=convergence_bound,
        progress_bound=progress_bound,
        certify=certify,
        expected=expected,
        judged=judged,
    )
    doc = summary_json(results)
    doc.update(outcome(results, expect, expected))
    doc["inputs"] = [str(p) for p in paths]
    # a real cluster's node whose trace ends without a clean stop (killed)
    doc["judged_crashed"] = [
        {"run": j.run, "node": j.node, "t": j.t, "note": j.note()} for j in judged
    ]
    return doc


def metrics_paths(
    spark: SparkSession,
    paths: Sequence[str | Path],
    *,
    protocol: str | None = None,
) -> dict[str, Any]:
    """Measure the traces at ``paths``; the ``metrics.json`` document."""
    trace = load_traces(spark, paths, protocol=protocol)
    return compute_metrics(trace, load_runs(spark, paths))


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")


def _documents(
    spark_factory: Callable[[], SparkSession], directory: Path, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``check.json`` and ``metrics.json`` of ``directory``, computed there first when
    missing (Spark is started only then)."""
    check_file, metrics_file = directory / CHECK_FILE, directory / METRICS_FILE
    if not check_file.exists() or not metrics_file.exists():
        spark = spark_factory()
        if not check_file.exists():
            write_json(check_file, check_paths(spark, [directory], **kw))
            record_where(directory, "checks", where(spark))
        if not metrics_file.exists():
            write_json(metrics_file, metrics_paths(spark, [directory]))
    return json.loads(check_file.read_text()), json.loads(metrics_file.read_text())


def report_dir(
    spark_factory: Callable[[], SparkSession],
    directory: Path,
    out: Path,
    *,
    twin: Path | None = None,
    **kw: Any,
) -> Path:
    """Write the report of ``directory``, computing ``check.json`` and ``metrics.json``
    there first when they are missing (Spark is started only then), and the space-time
    diagrams it links to in ``timelines/`` beside it (:mod:`ringcast.lab.diagrams`).
    ``twin``: the other half of a side by side (a live output when ``directory`` is a
    simulated one, or the reverse; or a reference system's live run beside ringcast's),
    compared run by run (:mod:`ringcast.lab.twins`)."""
    check, metrics = _documents(spark_factory, directory, **kw)
    twins = None
    if twin is not None:
        modes = {twins_mod.side_of(directory): directory, twins_mod.side_of(twin): twin}
        if len(modes) != 2:
            (mode,) = modes
            raise LabError(
                f"--twin {twin}: {directory} and it are both {mode} outputs; "
                "give one simulated and one live, or a live run of ringcast and one of "
                "a reference system"
            )
        sides = {directory: (check, metrics), twin: _documents(spark_factory, twin, **kw)}
        twins = twins_mod.compare({m: sides[d] for m, d in modes.items()})
    sweep_file = directory / SWEEP_FILE
    sweep = json.loads(sweep_file.read_text()) if sweep_file.exists() else None
    where_file = directory / WHERE_FILE
    ran = json.loads(where_file.read_text()) if where_file.exists() else None
    out.parent.mkdir(parents=True, exist_ok=True)
    timelines = diagrams.draw(directory, out.parent, check, metrics)
    html = render_report(
        check, metrics, sweep, ran, timelines=timelines, out_dir=str(directory), twins=twins
    )
    out.write_text(html)
    return out


def run_pipeline(
    spark: SparkSession,
    out: Path,
    *,
    overrides: Mapping[str, Iterable[str]] | None = None,
    examples: int = 5,
    convergence_bound: float = 10.0,
    progress_bound: int = 1_000_000_000,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[dict[str, Any], Path, dict[str, float]]:
    """Check, measure and report a sweep output ``out`` with one session: writes
    ``check.json``, ``metrics.json`` and ``report.html`` there (the report even when
    properties are violated). Returns the check document, the report's path and the
    wall time of each phase."""
    import threading

    state: dict[str, Any] = {"fraction": 0.0, "note": "checking properties"}
    stop = threading.Event()

    def step(fraction: float, note: str) -> None:
        state.update(fraction=fraction, note=note)
        if progress is not None:
            progress(fraction, note)

    def tick() -> None:  # redraw (elapsed time) while a phase runs
        while not stop.wait(1.0):
            if progress is not None and state["fraction"] < 1.0:
                progress(float(state["fraction"]), str(state["note"]))

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        return _pipeline(spark, out, overrides, examples, (convergence_bound, progress_bound), step)
    finally:
        stop.set()
        ticker.join()


def _pipeline(
    spark: SparkSession,
    out: Path,
    overrides: Mapping[str, Iterable[str]] | None,
    examples: int,
    bounds: tuple[float, int],
    step: Callable[[float, str], None],
) -> tuple[dict[str, Any], Path, dict[str, float]]:
    import time

    times: dict[str, float] = {}
    step(0.0, "checking properties")
    t0 = time.perf_counter()
    doc = check_paths(
        spark,
        [out],
        overrides=overrides,
        examples=examples,
        convergence_bound=bounds[0],
        progress_bound=bounds[1],
    )
    write_json(out / CHECK_FILE, doc)
    record_where(out, "checks", where(spark))
    times["check"] = time.perf_counter() - t0
    step(0.5, "measuring")
    t0 = time.perf_counter()
    write_json(out / METRICS_FILE, metrics_paths(spark, [out]))
    times["metrics"] = time.perf_counter() - t0
    step(0.95, "writing the report")
    t0 = time.perf_counter()
    report = report_dir(lambda: spark, out, out / REPORT_FILE)
    times["report"] = time.perf_counter() - t0
    step(1.0, "done")
    return doc, report, times
