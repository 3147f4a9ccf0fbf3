"""Every property's cost on a 100-member run with crashes, in rows, not seconds.

The run (:func:`hostile_run`): 100 members install one configuration; they join
late and crash at staggered points, so that no node delivers every message; each
misses a message of its own; a few crashed members come back and install a second
configuration with the survivors. Each property's query is run on it and every
operator of its executed plan is read for the rows it put out (Spark's
``numOutputRows``): none may put out more than a small multiple of the trace's rows. A
stage that formed every pair of nodes for a message (about 5,000 at 100 members), or
copied a member list into every delivery, would put out around a hundred times more.
The same holds for a run whose total order is broken (one member swapped two
deliveries): the pairs are formed between the classes of nodes that delivered alike.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from lab_traces import _row, renumber, to_table

from ringcast.lab.checks import CHECKS
from ringcast.lab.checks.context import CheckContext

MEMBERS = [f"n{k:03d}" for k in range(100)]
MESSAGES = 120
MS = 1_000_000
BUDGET = 2
"""Rows an operator may put out per row of the trace."""


def hostile_run(run: str, seed: int = 5, swap: str | None = None) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for node in MEMBERS:
        rows.append(_row(run, node, 0, "view", view="v1", members=MEMBERS, transitional=False))
    submits = []
    for m in range(MESSAGES):
        sender = rng.choice(MEMBERS)
        msg = f"{sender}:{m + 1}"
        submits.append(msg)
        order = "safe" if m % 3 == 2 else "agreed"
        rows.append(_row(run, sender, (m + 1) * MS, "submit", msg=msg, order=order))
    survivors = [n for k, n in enumerate(MEMBERS) if k % 11 == 0]
    for k, node in enumerate(MEMBERS):
        hi = MESSAGES - (k % 11) * 5
        mine = [m for m in range(k % 7, hi) if m != 30 + k]
        got = list(mine)
        if node == swap:
            got[10], got[20] = got[20], got[10]
        for m, g in zip(mine, got, strict=True):
            order = "safe" if g % 3 == 2 else "agreed"
            t = (m + 1) * MS + MS // 2
            rows.append(_row(run, node, t, "deliver", msg=submits[g], order=order))
        if node not in survivors:
            t = (hi + 1) * MS
            rows.append(_row(run, node, t, "fault", detail={"action": "crash"}))
    t2 = (MESSAGES + 5) * MS
    for node in survivors:
        rows.append(_row(run, node, t2, "view", view="v2", members=survivors, transitional=False))
    return renumber(rows)


def _walk(node: Any, out: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """(operator, rows out) of every operator of an executed plan, through adaptive
    query stages and reused exchanges."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return _walk(node.executedPlan(), out)
    if kind.endswith("QueryStageExec"):
        return _walk(node.plan(), out)
    if kind == "ReusedExchangeExec":
        return _walk(node.child(), out)
    rows = node.metrics().get("numOutputRows")
    if rows.isDefined():
        out.append((node.nodeName(), int(rows.get().value())))
    for children in (node.children(), node.subqueries()):
        for k in range(children.size()):
            _walk(children.apply(k), out)
    return out


class Measured(NamedTuple):
    rows: list[Any]
    """The property's violations, collected."""
    ops: list[tuple[str, int]]
    """(operator, rows out) of every operator of the executed plan."""
    plan: str
    """The executed plan, as Spark prints it."""


@pytest.fixture(scope="module")
def trace(spark: Any) -> Any:
    from pyspark.sql import functions as F

    rows = hostile_run("ok") + hostile_run("bad", swap="n042")
    frame = spark.createDataFrame(to_table(rows)).withColumn("protocol", F.lit("raincore"))
    return frame.withColumn("scenario", F.lit("synthetic")).cache()


@pytest.fixture(scope="module")
def measure(trace: Any) -> Callable[[str], Measured]:
    """Each property's violations on :func:`trace`, queried once for all the tests
    that read them."""

    @functools.cache
    def measured(name: str) -> Measured:
        ctx = CheckContext(trace=trace)
        try:
            df = CHECKS[name].violations(ctx, frozenset({"raincore"}))
            rows = df.collect()
            plan = df._jdf.queryExecution().executedPlan()
            return Measured(rows, _walk(plan, []), plan.toString())
        finally:
            ctx.close()

    return measured


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_no_operator_puts_out_more_than_a_few_rows_per_trace_row(
    trace: Any, measure: Callable[[str], Measured], name: str
) -> None:
    n = trace.count()
    ops = measure(name).ops
    worst = max(ops, key=lambda o: o[1], default=("nothing", 0))
    assert worst[1] <= BUDGET * n, (name, worst, n)


def test_the_broken_run_is_found(measure: Callable[[str], Measured]) -> None:
    bad = measure("total_order").rows
    assert {r["run"] for r in bad} == {"bad"}
    assert all("n042" in r["nodes"] for r in bad)
    assert len({r["nodes"][0] if r["nodes"][0] != "n042" else r["nodes"][1] for r in bad}) > 90


def test_merge_atomicity_plans_its_merges_once(measure: Callable[[str], Measured]) -> None:
    """merge_atomicity reads its merges on four branches of its plan; they are a local
    checkpoint (``CheckContext.shared``), so the branches start from its rows instead
    of each repeating the merges' lineage. On this trace the executed plan had 190
    broadcast joins when the lineage was repeated, and has 7."""
    plan = measure("merge_atomicity").plan
    assert plan.count("BroadcastHashJoin") <= 20, plan.count("BroadcastHashJoin")
