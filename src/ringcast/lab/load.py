"""Reading traces into Spark: sweep outputs, ``ringcast sim`` outputs, runtime traces.

Every file is checked against the trace schema before Spark reads it (Parquet
footers only), so a missing or mistyped column is reported with the file's name
rather than as a Spark stack trace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ringcast.lab.errors import LabError
from ringcast.trace.reader import find_trace_files, read_trace, schema_protocol
from ringcast.trace.schema import ADDED_COLUMNS, COLUMNS
from ringcast.trace.validate import TraceSchemaError, schema_problems

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TRACES_DIR = "traces"
RUNS_FILE = "runs.parquet"
EXTRA_COLUMNS = ("protocol", "scenario")
"""Columns the lab adds to the trace: from a sweep's partition directories, a
``summary.json`` next to the trace, or the caller."""


def trace_root(path: Path) -> Path:
    """The directory (or file) holding the trace files of ``path`` (a sweep output's
    ``traces/`` when there is one)."""
    sub = path / TRACES_DIR
    return sub if sub.is_dir() else path


def _check_parquet(file: Path) -> tuple[str | None, bool]:
    """Check ``file``'s schema (its footer only); return the protocol it names in its
    metadata (:data:`~ringcast.trace.schema.PROTOCOL_KEY`), if any, and whether it
    holds the columns added since version 1 (a version 1 trace lacks ``network``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except (OSError, pa.ArrowException, ValueError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise LabError(f"{file}: not a readable Parquet file ({msg})") from None
    problems = [p for p in schema_problems(schema) if not _partition_only(p, file)]
    if problems:
        raise LabError(f"{file}: " + "; ".join(problems))
    return schema_protocol(schema), all(c in schema.names for c in ADDED_COLUMNS)


def _partition_only(problem: str, file: Path) -> bool:
    """A "missing column" problem fully explained by hive partition directories."""
    if not problem.startswith("missing columns: "):
        return False
    missing = problem.removeprefix("missing columns: ").split(", ")
    dirs = {part.partition("=")[0] for part in file.parts if "=" in part}
    return all(m in dirs for m in missing)


def _summary_protocol(file: Path) -> str | None:
    summary = file.parent / "summary.json"
    if not summary.is_file():
        return None
    try:
        return json.loads(summary.read_text()).get("protocol")
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class TraceInput:
    """The trace files of one path given to the lab, found and schema-checked."""

    base: Path  # absolute: what Spark's basePath is for the Parquet files
    parquet: dict[str | None, list[tuple[Path, bool]]]  # protocol -> (file, is current)
    jsonl: list[Path]


def trace_inputs(paths: Sequence[str | Path], *, protocol: str | None = None) -> list[TraceInput]:
    """Find and check the trace files of ``paths`` without Spark (``LabError`` naming the
    first missing, empty, unreadable or non-conforming input); see :func:`load_traces`."""
    if not paths:
        raise LabError("no trace paths given")
    out = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise LabError(f"{path}: no such file or directory")
        root = trace_root(path)
        files = [root] if root.is_file() else find_trace_files(root)
        if not files:
            raise LabError(f"{path}: holds no .parquet or .jsonl trace files")
        parquet = [f for f in files if f.suffix.lower() == ".parquet"]
        jsonl = [f for f in files if f.suffix.lower() == ".jsonl"]
        checked = {f: _check_parquet(f) for f in parquet}
        groups: dict[str | None, list[tuple[Path, bool]]] = {}
        for f in parquet:
            proto = checked[f][0] or _summary_protocol(f) or protocol
            groups.setdefault(proto, []).append((f, checked[f][1]))
        # absolute paths: a Spark Connect server (or a driver under spark-submit)
        # resolves a relative one against its own working directory
        base = (root if root.is_dir() else root.parent).resolve()
        out.append(TraceInput(base, groups, jsonl))
    return out


def load_traces(
    spark: SparkSession, paths: Sequence[str | Path], *, protocol: str | None = None
) -> DataFrame:
    """One DataFrame of the trace columns plus ``protocol`` and ``scenario``.

    ``paths`` are sweep output directories, trace directories or trace files
    (``.parquet``, ``.jsonl``). A trace's protocol is, first, its ``protocol=``
    partition directory (a sweep's output); else the one its Parquet file names in its
    metadata (the trace writer writes it, :func:`~ringcast.trace.reader.trace_protocol`);
    else the one of the ``summary.json`` beside it (``ringcast sim``); else
    ``protocol``; else ``unknown``, which is held to the default claims. Raises ``LabError``
    naming the first missing, empty, unreadable or non-conforming input.
    """
    import pyarrow as pa
    from pyspark.sql import functions as F

    frames = []
    for found in trace_inputs(paths, protocol=protocol):
        for proto, group in found.parquet.items():
            reader = spark.read.option("basePath", str(found.base))
            if len({current for _, current in group}) > 1:  # old and new format versions
                reader = reader.option("mergeSchema", "true")
            df = reader.parquet(*(str(f.resolve()) for f, _ in group))
            frames.append(_with_extras(df, proto, F))
        # JSON Lines (a real cluster's segments, often dozens of small files) are read
        # here and become one DataFrame per protocol: a union of one small DataFrame a
        # file would make every query of the check plan, and run a task for, each file.
        jsonl: dict[str | None, list[pa.Table]] = {}
        for f in found.jsonl:
            try:
                table = read_trace(f)
            except TraceSchemaError as e:
                raise LabError(str(e)) from None
            jsonl.setdefault(_summary_protocol(f) or protocol, []).append(table)
        for proto, tables in jsonl.items():
            df = spark.createDataFrame(pa.concat_tables(tables).to_pandas())
            frames.append(_with_extras(df, proto, F))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _with_extras(df: DataFrame, protocol: str | None, F: object) -> DataFrame:
    f = F  # pyspark.sql.functions
    cols = set(df.columns)
    if "network" not in cols:  # a trace of format version 1
        df = df.withColumn("network", f.lit(None).cast("int"))  # type: ignore[attr-defined]
    if "protocol" not in cols:
        df = df.withColumn("protocol", f.lit(protocol or "unknown"))  # type: ignore[attr-defined]
    if "scenario" not in cols:
        df = df.withColumn(
            "scenario",
            f.regexp_extract(f.col("run"), r"^([^:@]*)", 1),  # type: ignore[attr-defined]
        )
    return df.select(*COLUMNS, *EXTRA_COLUMNS)


def load_runs(spark: SparkSession, paths: Sequence[str | Path]) -> DataFrame | None:
    """The sweep's run table(s) (run, protocol, scenario, point, params, seed, nodes),
    or None when no path is a sweep output."""
    found = [str((Path(p) / RUNS_FILE).resolve()) for p in paths if (Path(p) / RUNS_FILE).exists()]
    if not found:
        return None
    return spark.read.parquet(*found)
