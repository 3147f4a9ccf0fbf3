"""convergence, one definition for every family: no unsettled period after the last
fault longer than the bound in failure-detection timeouts. The lab's Spark check and
the plain definition (:mod:`ringcast.lab.liveness`, what the benches use) agree, on
synthetic traces and on hostile runs of every family."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from lab_traces import MS, _row, renumber, to_table

from ringcast.lab.checks import run_checks
from ringcast.lab.checks.runner import HOLDS, VIOLATED
from ringcast.lab.liveness import convergence, delivery_progress, settling
from ringcast.lab.load import load_traces
from ringcast.lab.properties import converge_on
from ringcast.protocols import registry
from ringcast.sim import Simulation
from ringcast.sim.hostile import HOSTILE, hostile_scenario

ABC = ["A", "B", "C"]
FD = 10 * MS
"""The failure-detection timeout the synthetic runs record: the bound is 100 ms."""


def _view(run: str, node: str, t: int, view: str, members: list[str] = ABC) -> dict[str, Any]:
    return _row(run, node, t, "view", view=view, members=members, transitional=False)


def _run(run: str, relapse: tuple[int, int | None] | None, end: int) -> list[dict[str, Any]]:
    """A, B, C in v1; B crashes at 100 ms and restarts at 150 ms (the last fault); all
    three in v2 at 200 ms; with ``relapse`` (from, to), C is suspected at ``from`` (A
    and B install v3 = A+B) and all three are back in v4 at ``to`` (None: never)."""
    rows = [_view(run, n, 0, "v1") for n in ABC]
    rows.append(_row(run, "B", 100 * MS, "fault", detail={"action": "crash"}))
    rows.append(_row(run, "B", 150 * MS, "fault", detail={"action": "restart"}))
    rows += [_view(run, n, 200 * MS, "v2") for n in ABC]
    if relapse is not None:
        a, b = relapse
        rows += [_view(run, n, a, "v3", ["A", "B"]) for n in ("A", "B")]
        if b is not None:
            rows += [_view(run, n, b, "v4") for n in ABC]
    detail = {"state": "up", "detection_timeout": FD}
    rows += [_row(run, n, end, "stats", detail=detail) for n in ABC]
    return rows


CASES = {
    # settled 50 ms after the last fault, for good
    "settles": (None, 1000 * MS, HOLDS),
    # a relapse of 90 ms: shorter than the bound
    "short_relapse": ((500 * MS, 590 * MS), 1000 * MS, HOLDS),
    # a relapse of 200 ms: twice the bound
    "long_relapse": ((500 * MS, 700 * MS), 1000 * MS, VIOLATED),
    # split at the end for 60 ms only: not judged late
    "open_short": ((940 * MS, None), 1000 * MS, HOLDS),
    # split at the end for 300 ms
    "open_long": ((700 * MS, None), 1000 * MS, VIOLATED),
}


def _frame(spark: Any, rows: list[dict[str, Any]], protocol: str) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.createDataFrame(to_table(renumber(rows)))
        .withColumn("protocol", F.lit(protocol))
        .withColumn("scenario", F.lit("synthetic"))
    )


def test_unsettled_periods_are_judged_against_the_recorded_timeout(spark: Any) -> None:
    rows = [r for name, (rel, end, _) in CASES.items() for r in _run(name, rel, end)]
    (result,) = run_checks(_frame(spark, rows, "totem"), properties=["convergence"], examples=100)
    violated = {c["run"] for c in result.counterexamples}
    assert violated == {n for n, (_, _, want) in CASES.items() if want == VIOLATED}
    notes = {c["run"]: c["note"] for c in result.counterexamples}
    assert notes["long_relapse"].startswith("unsettled for 200 ms from 500 ms (bound 10 x 10")
    for name, (rel, end, want) in CASES.items():  # the plain definition agrees
        bad = convergence(_run(name, rel, end), set(ABC), FD)
        assert (want == VIOLATED) == bool(bad), name
    st = settling(_run("x", (500 * MS, 590 * MS), 1000 * MS), ABC, 150 * MS, 1000 * MS)
    assert (st.first, st.worst, st.worst_from, st.at_end) == (50 * MS, 90 * MS, 500 * MS, True)


def test_the_bound_scales_with_the_timeout(spark: Any) -> None:
    rows = _run("r", (500 * MS, 700 * MS), 1000 * MS)  # a 200 ms relapse
    for r in rows:
        if r["kind"] == "stats":
            r["detail"] = r["detail"].replace(str(FD), str(30 * MS))
    (result,) = run_checks(_frame(spark, rows, "gms"), properties=["convergence"])
    assert result.status == HOLDS  # bound 300 ms
    (result,) = run_checks(
        _frame(spark, rows, "gms"), properties=["convergence"], convergence_bound=5
    )
    assert result.status == VIOLATED  # bound 150 ms


SEEDS = 3
BOUND = 2.0
"""Tighter than the default, so that the sample has runs on both sides."""


@pytest.fixture(scope="module")
def hostile(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, bool], set[str]]:
    """Hostile runs of every family (a short quiet end), written as ``ringcast sim``
    does; each run's convergence verdict by the plain definition, and the runs the
    plain delivery_progress fails."""
    out = tmp_path_factory.mktemp("hostile-convergence")
    verdicts: dict[str, bool] = {}
    stalled: set[str] = set()
    harsh = dataclasses.replace(HOSTILE, quiet=6.0)
    for protocol in registry.builtin_names():
        spec = registry.get(protocol)
        timeout = spec.timeout_ns({})
        assert timeout is not None, protocol  # every family exposes one
        for seed in range(1, SEEDS + 1):
            run = hostile_scenario(seed, protocol, token_timeout=timeout, harshness=harsh)
            res = Simulation(run.scenario, seed=seed).run()
            res.write(out / f"{protocol}-{seed}")
            rows = res.events()
            on_members = converge_on(protocol) == "members"
            bad = convergence(rows, run.live, timeout, bound=BOUND, on_members=on_members)
            verdicts[res.run_id] = bool(bad)
            if delivery_progress(rows, end=run.scenario.duration):
                stalled.add(res.run_id)
    return out, verdicts, stalled


def test_the_lab_and_the_plain_definition_agree_on_hostile_runs(
    spark: Any, hostile: tuple[Path, dict[str, bool], set[str]]
) -> None:
    out, verdicts, stalled = hostile
    frame = load_traces(spark, [out])
    results = run_checks(
        frame,
        properties=["convergence", "delivery_progress"],
        overrides={"*": ["convergence", "delivery_progress"]},
        convergence_bound=BOUND,
        examples=10_000,
    )
    by = {r.property: r for r in results}
    conv, progress = by["convergence"], by["delivery_progress"]
    assert {c["run"] for c in progress.counterexamples} == stalled
    lab = {c["run"] for c in conv.counterexamples}
    assert lab == {run for run, bad in verdicts.items() if bad}
    assert 0 < len(lab) < len(verdicts)  # both verdicts are exercised
