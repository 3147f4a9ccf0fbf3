"""Applying the property checks to a trace and summarising their results."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ringcast.lab.checks.certify import CERTIFIED, Certificate, certificate, plan_layout
from ringcast.lab.checks.context import (
    TOKEN,
    VIOLATION_COLUMNS,
    CheckContext,
    JudgedCrash,
    small_frame,
)
from ringcast.lab.checks.screen import screen as screen_runs
from ringcast.lab.properties import PROPERTIES, claims, declares_kind
from ringcast.lab.session import job_context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

HOLDS, VIOLATED, NOT_APPLICABLE = "holds", "violated", "not applicable"
EXPECTED = "violated as expected"
"""The status of a property every violation of which a sweep declared expected
(:mod:`ringcast.lab.expect`): it does not fail the check."""
ADAPTIVE = "spark.sql.adaptive.enabled"
"""Adaptive query execution is off while the checks run: their shuffles are sized by
hand (by run, or a handful of partitions), every small side of a join is broadcast on
purpose, and re-planning after each of the few hundred stages of a check costs more
than it finds (measured side by side in ``docs/benchmarks.md``). The session's own
setting is restored afterwards."""
POOL = "spark.scheduler.pool"
CERTIFICATE_POOL = "ringcast-certificate"
"""The scheduler pool of the certificate's jobs and of the checks that wait for it
(:data:`READS_DELIVERIES`). With the lab session's fair scheduler
(:func:`ringcast.lab.session.spark_session`) the jobs of the checks that run beside
them get task slots meanwhile instead of queueing behind their tasks."""
READS_DELIVERIES = ("total_order", "integrity", "fifo", "virtual_synchrony", "safe_delivery")
"""The checks that read ``deliver`` or ``submit`` rows: they run after the certificate
(:func:`run_checks`), the others beside both."""


@dataclass
class PropertyResult:
    """The outcome of one property over every run that claims it and has its inputs."""

    property: str
    description: str
    status: str
    runs_checked: int = 0
    runs_screened: int = 0
    """Of the runs checked, those the screen cleared (:mod:`.screen`)."""
    runs_certified: int = 0
    """Of the runs checked, those proved by the certificate (:mod:`.certify`), of the
    runs the screen did not clear."""
    runs_violated: int = 0
    """Runs with a violation that no expectation covers (and ``violations``, those)."""
    violations: int = 0
    runs_expected: int = 0
    """Runs with a violation that an expectation covers (and ``expected_violations``)."""
    expected_violations: int = 0
    protocols: dict[str, dict[str, Any]] = field(default_factory=dict)
    counterexamples: list[dict[str, Any]] = field(default_factory=list)
    violated_runs: list[str] = field(default_factory=list)
    """Every run with a violation, expected or not (sorted)."""
    expected_by: dict[int, int] = field(default_factory=dict, repr=False)
    """Per expectation (its index), the runs it covers that violate the property (in
    ``check.json`` under ``expectations``, not here)."""

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        del doc["expected_by"]
        return doc


def run_checks(
    trace: DataFrame,
    *,
    properties: Iterable[str] | None = None,
    overrides: Mapping[str, Iterable[str]] | None = None,
    examples: int = 5,
    convergence_bound: float = 10.0,
    progress_bound: int = 1_000_000_000,
    safe_grace: int = 500_000_000,
    partitions: int | None = None,
    certify: bool = True,
    expected: DataFrame | None = None,
    judged: list[JudgedCrash] | None = None,
    screen: bool | Iterable[str] = True,
) -> list[PropertyResult]:
    """Check ``properties`` (default: all) over ``trace`` (trace columns + protocol).

    Each property is applied to the runs of the protocols claiming it
    (:func:`ringcast.lab.properties.claims`, ``overrides`` first) that have its inputs;
    a property no such run exists for is "not applicable". Up to ``examples``
    counterexamples are kept per property, earliest run and time first.

    ``expected`` (:func:`ringcast.lab.expect.expected_runs`: run, property, expects)
    names the (run, property) pairs whose violations a sweep declared expected: they
    are counted apart (``runs_expected``, ``expected_violations``), their
    counterexamples are marked ``expected`` and come after the others, and a property
    with no other violation is :data:`EXPECTED` instead of :data:`VIOLATED`.

    With ``certify`` (the default), the runs the screen clears
    (:mod:`ringcast.lab.checks.screen`; ``screen=False``: none, a collection of
    property names: those properties only) go through no exact check of the
    properties it clears them for; then total_order, fifo and integrity
    are proved for the runs whose deliveries pass :mod:`ringcast.lab.checks.certify`;
    only the other runs go through their exact checks (``certify=False``: every run
    does, the plain reference). The deliveries of a run are read by the exact checks
    only when one of them needs it.

    Adaptive query execution is off meanwhile (:data:`ADAPTIVE`). The checks run in two
    rounds, each annotating its rows once and holding them in memory, counting the
    violations of its properties in one Spark job and collecting their counterexamples
    in one more (none when every property holds):

    1. the properties that read no delivery, *while* the certificate's job runs in a
       thread of its own: their planning on the driver and their small jobs fill the
       cores the certificate leaves idle (:data:`READS_DELIVERIES`). The certificate
       is planned first, on the caller's thread, so that its job is under way before
       the driver turns to the others;
    2. the properties that read deliveries, over the runs the certificate left (none
       when it proved every run and no other of them applies), in the certificate's
       thread as soon as it is done: beside the first round if that is still under
       way, since neither reads what the other computes (``docs/benchmarks.md``).

    ``judged``, when given, receives the nodes of real clusters' traces judged crashed
    where their traces end (:func:`~ringcast.lab.checks.context.judged_crashes`).
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
        progress_bound=progress_bound,
        safe_grace=safe_grace,
        delivery_runs=frozenset(),
    )
    sc = job_context(trace.sparkSession)
    with _adaptive_off(trace.sparkSession.conf), closing(ctx):
        with _phase(sc, "ringcast check: runs and their inputs"):
            info = ctx.run_info
        if judged is not None:
            judged.extend(ctx.judged)
        # token rows are only needed for the protocols single_token is applied to, and
        # only read where the protocol declares the kind (a protocol's own kind)
        ctx.token_protocols = frozenset(
            r["protocol"]
            for r in info
            if "single_token" in names
            and "single_token" in claims(r["protocol"], overrides)
            and declares_kind(r["protocol"], TOKEN)
        )
        plans = [(name, *_plan_one(CHECKS[name], info, overrides)) for name in names]
        results = [result for _name, result, _active, _runs in plans]
        # the exact checks: per property, the runs not already decided
        regular = {r["run"]: r["regular"] for r in info}
        exact: dict[str, list[str]] = {}
        for name, _result, _active, runs in plans:
            if name == "virtual_synchrony":
                # no node installed two regular configurations: no segment to compare
                runs = [r for r in runs if regular.get(r, 0) >= 2]
            exact[name] = runs
        screened = set(names) if screen is True else set(screen or ())
        if certify and screened:
            with _phase(sc, "ringcast check: screen the runs"):
                cleared = screen_runs(ctx, {n: r for n, r in exact.items() if n in screened})
            for name, result, _active, _runs in plans:
                if name in cleared:
                    result.runs_screened = len(exact[name]) - len(cleared[name])
            exact = {**exact, **cleared}
        first = {n: runs for n, runs in exact.items() if n not in READS_DELIVERIES}
        with ThreadPoolExecutor(1, thread_name_prefix="ringcast-certificate") as pool:
            proof = _start_certificate(ctx, exact, pool) if certify else None
            # one worker: the second round starts as soon as the certificate is done
            second = pool.submit(
                _in_pool, sc, _second_round, ctx, plans, exact, proof, examples, expected
            )
            # the first round reads the rows of its own runs only (those the screen left)
            early = ctx.for_runs(frozenset(r for runs in first.values() for r in runs))
            with closing(early):
                _exact(
                    early, plans, first, examples, "the properties that read no delivery", expected
                )
            second.result()
        return results


def _in_pool(sc: Any, fn: Any, *args: Any) -> Any:
    """Call ``fn(*args)`` with this thread's Spark jobs in :data:`CERTIFICATE_POOL`."""
    sc.setLocalProperty(POOL, CERTIFICATE_POOL)
    try:
        return fn(*args)
    finally:
        sc.setLocalProperty(POOL, None)


def _second_round(
    ctx: CheckContext,
    plans: list[tuple[str, PropertyResult, frozenset[str], list[str]]],
    exact: Mapping[str, list[str]],
    proof: Future[set[str]] | None,
    examples: int,
    expected: DataFrame | None,
) -> None:
    """The properties that read deliveries, over the runs the certificate (``proof``,
    None: no certificate) left."""
    certified = proof.result() if proof is not None else set()
    second: dict[str, list[str]] = {}
    for name, result, _active, _runs in plans:
        if name in CERTIFIED:
            second[name] = [r for r in exact[name] if r not in certified]
            result.runs_certified = len(exact[name]) - len(second[name])
        elif name in READS_DELIVERIES:
            # the certificate proves nothing about these (a node that stops delivering
            # before the others keeps one common order, and misses messages)
            second[name] = list(exact[name])
    if any(second.values()):
        late = ctx.with_deliveries(frozenset(r for runs in second.values() for r in runs))
        with closing(late):
            _exact(late, plans, second, examples, "the properties that read deliveries", expected)


def _exact(
    ctx: CheckContext,
    plans: list[tuple[str, PropertyResult, frozenset[str], list[str]]],
    todo: Mapping[str, list[str]],
    examples: int,
    what: str,
    expected: DataFrame | None,
) -> None:
    """The exact checks of the properties in ``todo`` over their runs there: plan their
    frames, annotate the trace (:meth:`CheckContext.materialize`) and count."""
    from ringcast.lab.checks import CHECKS

    sc = job_context(ctx.trace.sparkSession)
    results: list[PropertyResult] = []
    frames: list[DataFrame] = []
    scopes: list[tuple[str, str]] = []
    with _phase(sc, f"ringcast check: plan {what}"):
        for name, result, active, _runs in plans:
            if active and todo.get(name):
                results.append(result)
                frames.append(_tagged(ctx, CHECKS[name], active))
                scopes += [(name, r) for r in todo[name]]
    if frames:
        with _phase(sc, f"ringcast check: annotate the trace for {what}"):
            ctx.materialize()
        with _phase(sc, f"ringcast check: count violations of {what}"):
            _count(ctx, results, frames, scopes, examples, expected)


@contextmanager
def _adaptive_off(conf: Any) -> Iterator[None]:
    """Switch :data:`ADAPTIVE` off for the block, then restore the session's setting."""
    before = conf.get(ADAPTIVE, None)
    conf.set(ADAPTIVE, "false")
    try:
        yield
    finally:
        if before is None:
            conf.unset(ADAPTIVE)
        else:
            conf.set(ADAPTIVE, before)


@contextmanager
def _phase(sc: Any, what: str) -> Iterator[None]:
    """Name the Spark jobs of one phase (visible with ``--ui``) and, with
    ``RINGCAST_LAB_PROFILE`` set, print its wall time on stderr."""
    sc.setJobDescription(what)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        sc.setJobDescription(None)
        if os.environ.get("RINGCAST_LAB_PROFILE"):
            print(f"{time.perf_counter() - t0:8.2f} s  {what}", file=sys.stderr, flush=True)


def _plan_one(
    module: Any,
    info: list[dict[str, Any]],
    overrides: Mapping[str, Iterable[str]] | None,
) -> tuple[PropertyResult, frozenset[str], list[str]]:
    """The result skeleton of one property, the protocols it applies to, its runs."""
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
    if active:
        result.runs_checked = len(checked_runs)
        result.status = HOLDS
    return result, active, sorted(checked_runs)


def _start_certificate(
    ctx: CheckContext, exact: Mapping[str, list[str]], pool: ThreadPoolExecutor
) -> Future[set[str]]:
    """Plan the certificate of the runs that total_order, fifo or integrity still has
    to check (``exact``; on this thread) and run it in ``pool``: the future's result is
    the runs it proves the three properties for."""
    wanted = {r for name, runs in exact.items() if name in CERTIFIED for r in runs}
    nodes = [n for n in ctx.run_nodes if n.run in wanted]
    if not nodes:
        return pool.submit(set)
    spark = ctx.trace.sparkSession
    sc = job_context(spark)
    partitions = ctx.partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 2)
    with _phase(sc, "ringcast check: plan the certificate"):
        planned = certificate(ctx.trace, plan_layout(nodes, partitions))
    runs = {n.run for n in nodes}
    return pool.submit(lambda: runs - _in_pool(sc, _prove, sc, planned))


def _prove(sc: Any, planned: Certificate) -> set[str]:
    """Run a planned certificate: the runs that fail it."""
    with _phase(sc, "ringcast check: certificate"):
        return planned.failed_runs()


def _tagged(ctx: CheckContext, module: Any, active: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    v = module.violations(ctx, active).select(*VIOLATION_COLUMNS)
    return v.select(F.lit(module.NAME).alias("property"), *VIOLATION_COLUMNS)


def _count(
    ctx: CheckContext,
    results: list[PropertyResult],
    frames: list[DataFrame],
    scopes: list[tuple[str, str]],
    examples: int,
    expected: DataFrame | None,
) -> None:
    """Count every property's violations in one job, then fetch the counterexamples.

    The violations are joined to ``expected`` (broadcast: a row per run and property
    that a sweep expects to violate) and counted by (property, protocol, expects):
    each (property, run) pair has one ``expects``, so the groups split the runs.

    The union of every property's violations is computed once into a local checkpoint
    (``DataFrame.localCheckpoint``): the three queries over it (the counts, the
    violated runs, the counterexamples) start from its rows. Persisted instead, the
    union's plan, a few hundred operators, was planned again to cache it and to find
    it in the cache for every query: about a fifth of a small check's time
    (``docs/benchmarks.md``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = ctx.trace.sparkSession
    checked = small_frame(spark, scopes, "property string, run string")
    allv = frames[0]
    for f in frames[1:]:
        allv = allv.unionByName(f)
    allv = allv.join(F.broadcast(checked), ["property", "run"], "left_semi")
    if expected is not None:
        allv = allv.join(F.broadcast(expected), ["property", "run"], "left")
    else:
        allv = allv.withColumn("expects", F.lit(None).cast("array<int>"))
    # its blocks are the executors' cached blocks, freed with the frame
    allv = allv.localCheckpoint(eager=True)
    by_name = {r.property: r for r in results}
    counts = (
        allv.groupBy("property", "protocol", "expects")
        .agg(F.count("*").alias("n"), F.countDistinct("run").alias("runs"))
        .collect()
    )
    for c in counts:
        _tally(by_name[c.property], c.protocol, c.expects, int(c.n), int(c.runs))
    if counts:
        pairs = allv.select("property", "run").distinct().orderBy("property", "run")
        for row in pairs.collect():
            by_name[row.property].violated_runs.append(row.run)
    if counts and examples > 0:
        late = F.col("expects").isNotNull()  # the unexpected first
        w = Window.partitionBy("property").orderBy(late, "run", "t", "note")
        rows = (
            allv.withColumn("_k", F.row_number().over(w))
            .filter(F.col("_k") <= examples)
            .orderBy("property", "_k")
            .drop("_k")
            .collect()
        )
        for row in rows:
            d = row.asDict(recursive=True)
            expects = d.pop("expects")
            d["expected"] = expects is not None
            d["expect"] = expects[0] if expects else None
            by_name[d.pop("property")].counterexamples.append(d)


def _tally(
    result: PropertyResult, protocol: str, expects: list[int] | None, n: int, runs: int
) -> None:
    """Add one group of violations (``n`` in ``runs`` runs of ``protocol``; ``expects``:
    the expectations covering them, None: unexpected) to ``result``."""
    entry = result.protocols[protocol]
    if expects is None:
        entry["violations"] = entry.get("violations", 0) + n
        entry["runs_violated"] = entry.get("runs_violated", 0) + runs
        result.violations += n
        result.runs_violated += runs
        result.status = VIOLATED
        return
    entry["expected_violations"] = entry.get("expected_violations", 0) + n
    entry["runs_expected"] = entry.get("runs_expected", 0) + runs
    result.expected_violations += n
    result.runs_expected += runs
    for k in expects:
        result.expected_by[k] = result.expected_by.get(k, 0) + runs
    if result.status != VIOLATED:
        result.status = EXPECTED


def summary_json(results: list[PropertyResult]) -> dict[str, Any]:
    """The ``--json`` document: every property's result and an overall ``ok``, true
    when no violation is unexpected (:data:`EXPECTED` passes)."""
    return {
        "ok": all(r.status != VIOLATED for r in results),
        "properties": {r.property: r.to_json() for r in results},
    }
