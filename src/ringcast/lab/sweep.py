"""Running a sweep on Spark: simulations inside tasks, traces written as Parquet.

The run specifications go to the executors in the task closure; ``spark.range`` over
the run indices is cut into partitions of consecutive runs (seeds of one point
together) and ``mapInArrow`` runs each partition's simulations, yielding each trace's
record batches as it finishes. Spark writes them under ``OUT/traces`` partitioned by
protocol and scenario; no trace passes through the driver. The driver writes the run
table (``runs.parquet``) and ``sweep.json`` (with the sweep's expected violations,
:mod:`ringcast.lab.expect`) and shows a progress bar fed by Spark's
status tracker.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ringcast.lab.grid import RunSpec, Sweep
from ringcast.lab.load import RUNS_FILE, TRACES_DIR
from ringcast.lab.session import default_parallelism, is_connect

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

ERROR_KIND = "sim_error"
"""The kind of the one row a run that raised writes instead of its trace."""


def output_arrow_schema() -> pa.Schema:
    """The Arrow schema of a sweep's trace rows: the trace schema
    (:data:`ringcast.trace.schema.SCHEMA`) and two more columns, never null, naming each
    row's protocol and scenario."""
    import pyarrow as pa

    from ringcast.trace.schema import SCHEMA

    return SCHEMA.append(pa.field("protocol", pa.string(), nullable=False)).append(
        pa.field("scenario", pa.string(), nullable=False)
    )


def output_schema() -> StructType:
    """The Spark schema of a sweep's trace rows, derived from
    :func:`output_arrow_schema` (one source for both)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(output_arrow_schema())


def simulate(spec: RunSpec, document: dict[str, Any]) -> pa.Table:
    """One run's trace with its protocol and scenario columns (or one error row)."""
    import pyarrow as pa

    from ringcast.sim import Simulation, parse_scenario
    from ringcast.trace.schema import SCHEMA

    try:
        scenario = parse_scenario(document, spec.scenario, checked=True)
        table = Simulation(scenario, spec.seed, run_id=spec.run).run().table()
    except Exception as e:  # a failing run is recorded, not lost with its partition
        detail = json.dumps(
            {"error": f"{type(e).__name__}: {e}", "where": traceback.format_exc(limit=-3)}
        )
        row: dict[str, Any] = {c: None for c in SCHEMA.names}
        row.update(run=spec.run, node="-", t=0, i=0, kind=ERROR_KIND, detail=detail)
        table = pa.Table.from_pylist([row], schema=SCHEMA)
    n = table.num_rows
    table = table.append_column("protocol", pa.array([spec.protocol] * n, pa.string()))
    return table.append_column("scenario", pa.array([spec.scenario] * n, pa.string()))


def _task(
    runs: list[RunSpec], documents: list[dict[str, Any]], setup: Callable[[], None] | None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if setup is not None:
            setup()
        for batch in batches:
            for k in batch.column("id").to_pylist():
                spec = runs[k]
                yield from simulate(spec, documents[spec.scenario_index]).to_batches(
                    max_chunksize=65536
                )

    return run_partition


def _runs_done(done: int, total: int, runs: int) -> str:
    """A progress label: tasks done, and the runs they held (``spark.range`` gives each
    task an equal share of the run ids, to within one)."""
    return f"{done}/{total} partitions, {done * runs // total if total else runs}/{runs} runs"


def _watch(
    spark: SparkSession,
    progress: Callable[[float, str], None],
    stop: threading.Event,
    total: int,
    runs: int,
) -> None:
    tracker = spark.sparkContext.statusTracker()
    while not stop.wait(0.5):
        done = 0
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None and info.numTasks == total:
                done = max(done, info.numCompletedTasks)
        progress(done / total if total else 1.0, _runs_done(done, total, runs))


def _connect_progress(
    spark: SparkSession, progress: Callable[[float, str], None], total: int, runs: int
) -> Callable[[], None]:
    """Under Spark Connect there is no status tracker on this side: the server reports
    the stages of each operation to a progress handler instead."""
    register = getattr(spark, "registerProgressHandler", None)
    if register is None:  # an older client: the bar only ends
        return lambda: None

    def handler(stages: Any, inflight_tasks: int, operation_id: str, done: bool) -> None:
        for stage in stages or ():
            if getattr(stage, "num_tasks", None) == total:
                finished = stage.num_completed_tasks
                progress(finished / total if total else 1.0, _runs_done(finished, total, runs))

    register(handler)
    # pyspark types the handler as its ProgressHandler ABC, and documents any callable of
    # that signature as accepted; older pyspark has no removeProgressHandler in its stubs.
    return lambda: spark.removeProgressHandler(handler)  # type: ignore[arg-type, attr-defined]


def run_sweep(
    spark: SparkSession,
    sweep: Sweep,
    out: str | Path,
    *,
    partitions: int | None = None,
    progress: Callable[[float, str], None] | None = None,
    setup: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run every simulation of ``sweep`` and write ``out/traces``, ``out/runs.parquet``
    and ``out/sweep.json``; return the summary written to ``sweep.json``.

    ``partitions`` (else the sweep's, else four per core) is the number of Spark tasks;
    ``setup`` is called in every task before its first simulation (to register a
    protocol that lives outside ringcast, for example).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if sweep.live is not None:  # real processes, one run after another, not Spark tasks
        from ringcast.live.sweep import run_live_sweep

        return run_live_sweep(sweep, out, progress=progress)
    n = len(sweep.runs)
    parts = partitions or sweep.partitions or 4 * default_parallelism(spark)
    parts = max(1, min(parts, n))
    ids = spark.range(0, n, 1, numPartitions=parts)
    traces = ids.mapInArrow(_task(sweep.runs, sweep.documents, setup), output_schema())
    stop = threading.Event()
    watcher = None
    unregister: Callable[[], None] = lambda: None  # noqa: E731
    if progress is not None and is_connect(spark):
        unregister = _connect_progress(spark, progress, parts, n)
    elif progress is not None:
        watcher = threading.Thread(
            target=_watch, args=(spark, progress, stop, parts, n), daemon=True
        )
        watcher.start()
    t0 = time.perf_counter()
    try:
        # an absolute path: a Spark Connect server resolves a relative one against
        # its own working directory
        traces.write.mode("overwrite").partitionBy("protocol", "scenario").parquet(
            str((out / TRACES_DIR).resolve())
        )
    finally:
        stop.set()
        unregister()
        if watcher is not None:
            watcher.join()
    wall = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, _runs_done(parts, parts, n))
    runs = pa.Table.from_pylist([asdict(r) for r in sweep.runs]).drop_columns(["scenario_index"])
    pq.write_table(runs, out / RUNS_FILE)
    summary = {
        "name": sweep.name,
        "source": sweep.source,
        "runs": n,
        "partitions": parts,
        "wall_s": round(wall, 3),
        "runs_per_second": round(n / wall, 2) if wall > 0 else None,
        "protocols": sorted({r.protocol for r in sweep.runs}),
        "scenarios": sorted({r.scenario for r in sweep.runs}),
        "grid": sweep.grid,
        "seeds": sweep.seeds,
        "skipped": sweep.skipped,
        "expect": [e.as_dict() for e in sweep.expect],
    }
    (out / "sweep.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary
