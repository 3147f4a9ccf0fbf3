"""Expected violations: what a sweep declares its controls to violate.

A sweep that runs a control (a mode kept because it fails, such as GMS's ``plain`` view
installation) declares it in its file (parsed in :mod:`ringcast.lab.grid`)::

    [[expect]]
    protocol = "gms"
    where = { "settings.view_install" = "plain" }   # grid values of the point
    violates = ["convergence"]
    why = "plain installs views without acknowledgements"

The expectations travel in ``sweep.json``. The check (:func:`expected_runs`, then
:func:`ringcast.lab.checks.runner.run_checks`) marks each violation of a listed
property in a matching run as expected; a property whose violations are all expected
is ``violated as expected`` and does not fail the check. An expectation no run
fulfils is a warning (:func:`outcome`), never a failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from ringcast.lab.checks.runner import PropertyResult

SWEEP_FILE = "sweep.json"
EXPECT_KEY = "expect"
"""The key of the expectations in a sweep file and in ``sweep.json``."""


@dataclass
class Expectation:
    """Runs of ``protocol`` at the grid points matching ``where`` may violate the
    properties ``violates``, for the reason ``why``."""

    protocol: str
    violates: tuple[str, ...]
    why: str
    where: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """``gms at settings.view_install=plain`` (``gms`` with no ``where``)."""
        at = ",".join(f"{k}={v}" for k, v in self.where.items())
        return f"{self.protocol} at {at}" if at else self.protocol

    def matches(self, protocol: str, params: Mapping[str, Any]) -> bool:
        """Whether a run of ``protocol`` at grid values ``params`` is one it covers
        (the same test as :func:`expected_runs`, in Python)."""
        return protocol == self.protocol and all(
            key in params and _encoded(params[key]) == _encoded(value)
            for key, value in self.where.items()
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "where": dict(self.where),
            "violates": list(self.violates),
            "why": self.why,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Expectation:
        return cls(str(d["protocol"]), tuple(d["violates"]), str(d["why"]), dict(d["where"]))


def _encoded(value: Any) -> str:
    """A grid value as Spark reads it from the run table's ``params`` JSON into a
    ``map<string,string>``: a string as itself, anything else as its JSON text."""
    return value if isinstance(value, str) else json.dumps(value)


def read_expectations(paths: Iterable[str | Path]) -> list[tuple[Path, list[Expectation]]]:
    """The expectations of each sweep output among ``paths`` (its ``sweep.json``)."""
    out = []
    for p in paths:
        f = Path(p) / SWEEP_FILE
        if not f.is_file():
            continue
        try:
            raw = json.loads(f.read_text()).get(EXPECT_KEY) or []
        except (OSError, ValueError):
            continue
        if raw:
            out.append((Path(p), [Expectation.from_dict(d) for d in raw]))
    return out


def expected_runs(
    runs: DataFrame, expectations: Sequence[Expectation], first: int = 0
) -> DataFrame:
    """The (run, property, expects) rows of the run table ``runs`` (run, protocol,
    params) that expectations cover: ``expects`` lists the indices (from ``first``) of
    the expectations that allow the run to violate the property. One row per run and
    property; a narrow projection of the run table (no shuffle), small enough to
    broadcast to the violations."""
    from pyspark.sql import functions as F

    params = F.from_json(F.col("params"), "map<string,string>")

    def covers(e: Expectation) -> Column:
        cond = F.col("protocol") == F.lit(e.protocol)
        for key, value in e.where.items():
            cond = cond & params[key].eqNullSafe(F.lit(_encoded(value)))
        return cond

    conds = [covers(e) for e in expectations]
    entries = []
    for prop in sorted({p for e in expectations for p in e.violates}):
        ids = [
            F.when(conds[k], F.lit(first + k).cast("int"))
            for k, e in enumerate(expectations)
            if prop in e.violates
        ]
        expects = F.filter(F.array(*ids), lambda x: x.isNotNull())
        entries.append(F.struct(F.lit(prop).alias("property"), expects.alias("expects")))
    return (
        runs.select("run", F.explode(F.array(*entries)).alias("e"))
        .select("run", "e.property", "e.expects")
        .filter(F.size("expects") > 0)
    )


def expectations_of(
    spark: SparkSession, paths: Sequence[str | Path]
) -> tuple[list[Expectation], DataFrame | None]:
    """The expectations declared by the sweep outputs among ``paths`` (numbered in
    order) and the frame of :func:`expected_runs` over their run tables (None: none)."""
    from ringcast.lab.load import RUNS_FILE

    every: list[Expectation] = []
    frames = []
    for directory, found in read_expectations(paths):
        runs_file = directory / RUNS_FILE
        if not runs_file.is_file():
            continue
        runs = spark.read.parquet(str(runs_file.resolve())).select("run", "protocol", "params")
        frames.append(expected_runs(runs, found, first=len(every)))
        every += found
    if not frames:
        return [], None
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return every, out


def outcome(
    results: Sequence[PropertyResult],
    expectations: Sequence[Expectation],
    expected: DataFrame | None,
) -> dict[str, Any]:
    """The ``expectations`` and ``warnings`` of ``check.json``: each expectation with the
    runs violating each of its properties, and a warning for each (expectation,
    property) that no run violated (the matching runs are counted, in one small job,
    only then)."""
    by_name = {r.property: r for r in results}
    listed: list[dict[str, Any]] = []
    missing: list[tuple[int, str]] = []
    for k, e in enumerate(expectations):
        runs = {}
        for prop in e.violates:
            result = by_name.get(prop)
            runs[prop] = result.expected_by.get(k, 0) if result is not None else 0
            if runs[prop] == 0 and result is not None:
                missing.append((k, prop))
        listed.append({**e.as_dict(), "runs_violated": runs})
    warnings = []
    if missing:
        matched = _matched(expected) if expected is not None else {}
        for k, prop in missing:
            warnings.append(_warning(expectations[k], prop, by_name[prop], matched.get((k, prop))))
    return {"expectations": listed, "warnings": warnings}


def _matched(expected: DataFrame) -> dict[tuple[int, str], int]:
    """Per (expectation, property), the runs of the sweep it covers."""
    from pyspark.sql import functions as F

    rows = (
        expected.select("property", F.explode("expects").alias("k"))
        .groupBy("k", "property")
        .count()
        .collect()
    )
    return {(int(r.k), str(r.property)): int(r["count"]) for r in rows}


def _warning(e: Expectation, prop: str, result: PropertyResult, matched: int | None) -> str:
    head = f"expected {e.label()} to violate {prop}"
    entry = result.protocols.get(e.protocol)
    if not matched:
        return f"{head}, but no run of the sweep is there"
    if entry is None or not entry.get("claimed"):
        return f"{head}, but {e.protocol} is not checked for {prop} (not claimed)"
    if not entry.get("runs_checked"):
        return f"{head}, but none of its {matched} runs has what {prop} checks"
    return f"{head}, but none of its {matched} runs did"
