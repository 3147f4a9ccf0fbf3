"""Applying the property checks to a trace and summarising their results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ringcast.lab.checks.context import CheckContext
from ringcast.lab.properties import PROPERTIES, claims

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

HOLDS, VIOLATED, NOT_APPLICABLE = "holds", "violated", "not applicable"


@dataclass
class PropertyResult:
    """The outcome of one property over every run that claims it and has its inputs."""

    property: str
    description: str
    status: str
    runs_checked: int = 0
    runs_violated: int = 0
    violations: int = 0
    protocols: dict[str, dict[str, Any]] = field(default_factory=dict)
    counterexamples: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(
    trace: DataFrame,
    *,
    properties: Iterable[str] | None = None,
    overrides: Mapping[str, Iterable[str]] | None = None,
    examples: int = 5,
    convergence_bound: int = 10_000_000_000,
    safe_grace: int = 500_000_000,
    partitions: int | None = None,
) -> list[PropertyResult]:
    """Check ``properties`` (default: all) over ``trace`` (trace columns + protocol).

    Each property is applied to the runs of the protocols claiming it
    (:func:`ringcast.lab.properties.claims`, ``overrides`` first) that have its inputs;
    a property no such run exists for is "not applicable". Up to ``examples``
    counterexamples are kept per property, earliest run and time first.
    """
    from ringcast.lab.checks import CHECKS

    names = list(properties) if properties is not None else list(PROPERTIES)
    for n in names:
        if n not in CHECKS:
            raise ValueError(f"unknown property {n!r} (known: {', '.join(PROPERTIES)})")
    ctx = CheckContext(
        trace,
        partitions=partitions,
        convergence_bound=convergence_bound,
        safe_grace=safe_grace,
    )
    try:
        info = ctx.run_info
        # token rows are only needed for the protocols single_token is applied to
        ctx.token_protocols = frozenset(
            r["protocol"]
            for r in info
            if "single_token" in names and "single_token" in claims(r["protocol"], overrides)
        )
        results = []
        for name in names:
            results.append(_check_one(ctx, CHECKS[name], info, overrides, examples))
        return results
    finally:
        ctx.close()


def _check_one(
    ctx: CheckContext,
    module: Any,
    info: list[dict[str, Any]],
    overrides: Mapping[str, Iterable[str]] | None,
    examples: int,
) -> PropertyResult:
    from pyspark.sql import functions as F

    name = module.NAME
    per_proto: dict[str, dict[str, Any]] = {}
    checked_runs: set[str] = set()
    for r in info:
        proto = r["protocol"]
        entry = per_proto.setdefault(
            proto,
            {"claimed": name in claims(proto, overrides), "runs_checked": 0, "violations": 0},
        )
        if entry["claimed"] and r["tags"] & module.inputs(proto):
            entry["runs_checked"] += 1
            checked_runs.add(r["run"])
    active = frozenset(p for p, e in per_proto.items() if e["runs_checked"])
    result = PropertyResult(name, module.DESCRIPTION, NOT_APPLICABLE, protocols=per_proto)
    if not active:
        return result
    result.runs_checked = len(checked_runs)
    spark = ctx.trace.sparkSession
    runs = spark.createDataFrame([(r,) for r in sorted(checked_runs)], "run string")
    viol = module.violations(ctx, active).join(F.broadcast(runs), "run", "left_semi").cache()
    try:
        counts = (
            viol.groupBy("protocol")
            .agg(F.count("*").alias("n"), F.countDistinct("run").alias("runs"))
            .collect()
        )
        for c in counts:
            per_proto[c.protocol]["violations"] = int(c.n)
            per_proto[c.protocol]["runs_violated"] = int(c.runs)
        result.violations = sum(int(c.n) for c in counts)
        result.runs_violated = sum(int(c.runs) for c in counts)
        if result.violations:
            rows = viol.orderBy("run", "t", "note").limit(examples).collect()
            result.counterexamples = [r.asDict(recursive=True) for r in rows]
    finally:
        viol.unpersist()
    result.status = VIOLATED if result.violations else HOLDS
    return result


def summary_json(results: list[PropertyResult]) -> dict[str, Any]:
    """The ``--json`` document: every property's result and an overall ``ok``."""
    return {
        "ok": all(r.status != VIOLATED for r in results),
        "properties": {r.property: r.to_json() for r in results},
    }
