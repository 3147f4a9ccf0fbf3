"""The certificate for total_order, fifo and integrity: which runs it proves, and that
checking with it gives exactly the results of the exact checks alone.

The screen (``tests/lab/test_screen.py``), which clears the runs that hold before the
certificate sees them, screens here only the properties the certificate does not prove
(:data:`NOT_CERTIFIED`): these tests are the certificate's. The tests of the order of the
rounds turn it off."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

import pytest
from lab_traces import MS, _row, clean_trace, renumber, to_table

from ringcast.lab.checks import certify
from ringcast.lab.checks import run_checks as _run_checks
from ringcast.lab.checks.certify import failed_runs, plan_layout
from ringcast.lab.checks.context import CheckContext
from ringcast.lab.checks.runner import READS_DELIVERIES
from ringcast.lab.properties import PROPERTIES

NODES = ("A", "B", "C", "D")
LONGEST = "spark.sql.maxMetadataStringLength"
RUN_SCOPED = "certproto"  # not in ORDER_SCOPE: total order over the whole run
NOT_CERTIFIED = frozenset(PROPERTIES) - set(certify.CERTIFIED)
run_checks = functools.partial(_run_checks, screen=NOT_CERTIFIED)
ROUNDS = ("view_agreement", *certify.CERTIFIED)
"""The properties the tests of the rounds check: one that reads no delivery (the first
round) and the certificate's three (the second). Every property's exact check is
tested over the corruption catalogue (``test_reference.py``)."""
rounds_checks = functools.partial(_run_checks, screen=False, properties=ROUNDS)
"""For the tests of the rounds: every run of :data:`ROUNDS` goes to them."""


def steady(run: str, msgs: int = 12) -> list[dict[str, Any]]:
    """One configuration; every message submitted once and delivered by every node in
    one order (senders round robin): every property holds and the certificate applies."""
    rows = [
        _row(run, n, 0, "view", view="v1", members=list(NODES), transitional=False) for n in NODES
    ]
    counters = dict.fromkeys(NODES, 0)
    for k in range(msgs):
        s = NODES[k % len(NODES)]
        counters[s] += 1
        msg = f"{s}:{counters[s]}"
        t = (10 + 10 * k) * MS
        rows.append(_row(run, s, t, "submit", msg=msg, order="agreed", size=10))
        for j, n in enumerate(NODES):
            rows.append(_row(run, n, t + (j + 1) * 1000, "deliver", msg=msg, order="agreed"))
    return renumber(rows)


def _delivered(rows: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["kind"] == "deliver" and r["node"] == node]


def swapped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """B delivers its 3rd and 4th messages the other way round (total order breaks)."""
    a, b = _delivered(rows, "B")[2:4]
    a["msg"], b["msg"] = b["msg"], a["msg"]
    return rows


def duplicated(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """C delivers its 2nd message again at the end (integrity breaks)."""
    again = dict(_delivered(rows, "C")[1], t=10_000 * MS)
    return renumber([*rows, again])


def unsent(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every node delivers, last, a message nobody submitted (integrity breaks)."""
    extra = [
        _row(rows[0]["run"], n, 10_000 * MS, "deliver", msg="Z:1", order="agreed") for n in NODES
    ]
    return renumber(rows + extra)


def fifo_at_all(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every node delivers A:2 before A:1 (same order everywhere: only fifo breaks)."""
    for n in NODES:
        one = next(r for r in _delivered(rows, n) if r["msg"] == "A:1")
        two = next(r for r in _delivered(rows, n) if r["msg"] == "A:2")
        one["msg"], two["msg"] = "A:2", "A:1"
    return rows


def gap(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """D misses a message in the middle: nothing breaks, but the certificate fails."""
    victim = _delivered(rows, "D")[5]
    return renumber([r for r in rows if r is not victim])


def late_joiner(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """D delivers only from the 6th message on: nothing breaks, the certificate fails."""
    skip = {id(r) for r in _delivered(rows, "D")[:5]}
    return renumber([r for r in rows if id(r) not in skip])


SHAPES = {
    "swapped": (swapped, {"total_order"}),
    "duplicated": (duplicated, {"integrity"}),
    "unsent": (unsent, {"integrity"}),
    "fifo": (fifo_at_all, {"fifo"}),
    "gap": (gap, set()),
    "late": (late_joiner, set()),
}


def _frame(spark: Any, rows: list[dict[str, Any]], protocol: str) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.createDataFrame(to_table(rows))
        .withColumn("protocol", F.lit(protocol))
        .withColumn("scenario", F.lit("synthetic"))
    )


@pytest.fixture(scope="module")
def shapes(spark: Any) -> Any:
    rows = steady("clean")
    for name, (fn, _) in SHAPES.items():
        rows += fn(steady(name))
    return _frame(spark, rows, RUN_SCOPED)


def _failed(frame: Any, partitions: int) -> set[str]:
    layout = plan_layout(CheckContext(frame).run_nodes, partitions)
    return failed_runs(frame, layout)


@pytest.mark.parametrize("partitions", [1, 3])
def test_certificate_fails_exactly_the_irregular_runs(shapes: Any, partitions: int) -> None:
    """Whether the runs share one partition or spread over several."""
    assert _failed(shapes, partitions) == set(SHAPES)


def test_the_layout_numbers_runs_and_sizes_partitions(shapes: Any) -> None:
    """Runs are numbered in name order; the partitions hold at most
    ``ROWS_PER_PARTITION`` deliveries each and are never fewer than asked for."""
    nodes = CheckContext(shapes).run_nodes
    layout = plan_layout(nodes, 3)
    assert layout.runs == sorted({n.run for n in nodes}) and not layout.excluded
    assert layout.partitions == 3
    assert plan_layout(nodes, 1).partitions == 1
    few = [dataclasses.replace(n, deliveries=certify.ROWS_PER_PARTITION) for n in nodes]
    assert plan_layout(few, 1).partitions == len(few)


def test_any_event_index_is_labelled(spark: Any) -> None:
    """Labels are row numbers in ``i`` order, whatever the values of ``i``: a node whose
    indexes are huge or negative is certified like any other."""
    rows = steady("clean") + steady("huge") + steady("negative")
    for r in rows:
        if r["run"] == "huge" and r["node"] == "B":
            r["i"] += 1 << 40
        if r["run"] == "negative" and r["node"] == "C":
            r["i"] -= 1 << 50
    frame = _frame(spark, rows, RUN_SCOPED)
    assert _failed(frame, 1) == set()
    claims = {RUN_SCOPED: PROPERTIES}
    by = {
        r.property: r
        for r in run_checks(frame, overrides=claims, partitions=1, properties=certify.CERTIFIED)
    }
    assert by["total_order"].status == "holds"
    assert by["total_order"].runs_certified == 3


def _outcome(results: list[Any]) -> dict[str, Any]:
    return {
        r.property: (
            r.status,
            r.runs_checked,
            r.violations,
            sorted((c["run"], c["note"], tuple(c["msgs"])) for c in r.counterexamples),
        )
        for r in results
    }


def _agree(frame: Any, claims: dict[str, Any], examples: int) -> list[Any]:
    """Check ``frame`` with the certificate (every property) and without it (only the
    properties that read deliveries: the certificate decides nothing of the others,
    which run the same plan either way); assert they agree; the first results."""
    fast = run_checks(frame, overrides=claims, examples=examples)
    exact = run_checks(
        frame, overrides=claims, examples=examples, certify=False, properties=READS_DELIVERIES
    )
    assert {p: o for p, o in _outcome(fast).items() if p in READS_DELIVERIES} == _outcome(exact)
    assert all(r.runs_certified == 0 for r in exact)
    return fast


def test_view_scoped_protocols_are_certified_too(spark: Any) -> None:
    """One order over a whole run proves total order within each configuration: a
    Totem run whose nodes all deliver one order is certified; one where a node swaps
    two messages within its configuration is not, and the exact check reports it."""
    frame = _frame(spark, steady("clean") + swapped(steady("bad")), "totem")
    checked = run_checks(frame, overrides={"totem": PROPERTIES}, properties=certify.CERTIFIED)
    results = {r.property: r for r in checked}
    for name in certify.CERTIFIED:
        assert results[name].runs_checked == 2
        assert results[name].runs_certified == 1, name
    assert results["total_order"].status == "violated"
    assert {c["run"] for c in results["total_order"].counterexamples} == {"bad"}
    assert results["integrity"].status == "holds"


def _rounds(monkeypatch: Any) -> list[dict[str, list[str]]]:
    """Record what each round of exact checks is given: property -> runs."""
    from ringcast.lab.checks import runner

    seen: list[dict[str, list[str]]] = []
    exact = runner._exact

    def spy(ctx: Any, plans: Any, todo: Any, *args: Any) -> None:
        seen.append({name: sorted(runs) for name, runs in todo.items() if runs})
        exact(ctx, plans, todo, *args)

    monkeypatch.setattr(runner, "_exact", spy)
    return seen


def test_checks_without_deliveries_run_beside_the_certificate(spark: Any, monkeypatch: Any) -> None:
    """The first round has the properties that read no delivery (of :data:`ROUNDS`,
    view_agreement) and starts while the certificate is still under way (the
    certificate waits for it: run one after the other, it would wait in vain); the
    second has only what the certificate left: total_order, fifo and integrity for the
    one run it could not prove. When it proves every run and no other property reads
    deliveries, there is no second round."""
    import threading

    from ringcast.lab.checks import runner

    seen = _rounds(monkeypatch)
    first_round = threading.Event()
    exact, prove = runner._exact, runner._prove
    overlapped: list[bool] = []

    def round_(ctx: Any, plans: Any, todo: Any, *args: Any) -> None:
        if not set(todo) & set(READS_DELIVERIES):
            first_round.set()
        exact(ctx, plans, todo, *args)

    def certificate(sc: Any, planned: Any) -> set[str]:
        overlapped.append(first_round.wait(timeout=120))  # a deadlock guard, not a delay
        return prove(sc, planned)

    monkeypatch.setattr(runner, "_exact", round_)
    monkeypatch.setattr(runner, "_prove", certificate)
    frame = _frame(spark, steady("clean") + swapped(steady("bad")), RUN_SCOPED)
    results = {r.property: r for r in rounds_checks(frame, overrides={RUN_SCOPED: PROPERTIES})}
    assert overlapped == [True]
    first, second = seen
    assert set(first) == {"view_agreement"}
    assert not set(first) & set(READS_DELIVERIES)
    assert second == {name: ["bad"] for name in certify.CERTIFIED}
    assert results["total_order"].status == "violated"
    assert results["total_order"].runs_certified == 1

    seen.clear()
    frame = _frame(spark, steady("clean") + steady("also"), RUN_SCOPED)
    results = {r.property: r for r in rounds_checks(frame, overrides={RUN_SCOPED: PROPERTIES})}
    assert len(seen) == 1
    assert all(results[n].runs_certified == 2 for n in certify.CERTIFIED)
    assert all(r.status != "violated" for r in results.values())


def test_the_second_round_starts_without_waiting_for_the_first(
    spark: Any, monkeypatch: Any
) -> None:
    """The properties that read deliveries start as soon as the certificate is done,
    while the first round may still be under way: here the first round waits for the
    second to start (run one after the other, it would wait in vain), and both still
    give the results they give alone."""
    import threading

    from ringcast.lab.checks import runner

    second_round = threading.Event()
    exact = runner._exact
    overlapped: list[bool] = []

    def round_(ctx: Any, plans: Any, todo: Any, *args: Any) -> None:
        if set(todo) & set(READS_DELIVERIES):
            second_round.set()
        else:
            overlapped.append(second_round.wait(timeout=120))  # a deadlock guard
        exact(ctx, plans, todo, *args)

    monkeypatch.setattr(runner, "_exact", round_)
    frame = _frame(spark, steady("clean") + swapped(steady("bad")), RUN_SCOPED)
    results = {r.property: r for r in rounds_checks(frame, overrides={RUN_SCOPED: PROPERTIES})}
    assert overlapped == [True]
    assert results["total_order"].status == "violated"
    assert results["total_order"].runs_certified == 1
    assert [c["run"] for c in results["total_order"].counterexamples] == ["bad"]
    assert results["view_agreement"].status == "holds"


def test_a_context_with_deliveries_shares_the_inventory(spark: Any) -> None:
    """``with_deliveries`` keeps the rows of the runs it is given, their deliveries and
    submits included, and no token rows, and reuses the run inventory it was made
    from; ``for_runs`` keeps the rows of its runs, and reads every run's when given
    them all."""
    from pyspark.sql import functions as F

    rows = clean_trace("one") + clean_trace("two")
    frame = _frame(spark, rows, "raincore")
    ctx = CheckContext(frame, delivery_runs=frozenset())
    info = ctx.run_info
    late = ctx.with_deliveries(frozenset({"two"}))
    try:
        assert late.run_info is info
        kinds = {(r.run, r.kind) for r in late.rows.select("run", "kind").distinct().collect()}
        assert {run for run, _ in kinds} == {"two"}  # the rows of its runs alone
        assert ("two", "deliver") in kinds and ("two", "submit") in kinds
        assert not {k for k in kinds if k[0] == "one" and k[1] in ("deliver", "submit")}
        assert not {k for k in kinds if k[1] == "token"}
        assert late.deliveries.filter(F.col("run") != "two").count() == 0
        early = {r.kind for r in ctx.rows.select("kind").distinct().collect()}
        assert not early & {"deliver", "submit"}
        assert frame.filter(F.col("kind") == "deliver").count() > 0
        one = ctx.for_runs(frozenset({"one"}))
        assert one.run_info is info
        assert {r.run for r in one.rows.select("run").distinct().collect()} == {"one"}
        one.close()
        assert ctx.for_runs(frozenset({"one", "two"})).runs is None
    finally:
        late.close()
        ctx.close()


def test_the_annotation_keeps_every_host_kind_row(spark: Any) -> None:
    """The annotation keeps exactly the rows the checks may read: every row of every
    host kind of the registry (``drop`` and ``invariant`` included) and token rows with
    an op the checks use, without ``delivery_runs``; all but deliveries and submits with
    none. A protocol's own kinds (``elected``, ``coord``, ``view_ack``, ``rrp``) are
    never taken for a host kind, whatever their length."""
    from ringcast.lab.checks.context import KINDS, SMALL_KINDS, TOKEN, TOKEN_OPS
    from ringcast.protocols.registry import HOST_KINDS

    assert set(KINDS) == {*HOST_KINDS, TOKEN} and set(SMALL_KINDS) == set(KINDS) - {
        "deliver",
        "submit",
        TOKEN,
    }
    rows = clean_trace("one") + clean_trace("two")
    extra = [
        _row("one", "A", 5 * MS, kind, view="v1", msg="A:1", detail={"leader": "B", "op": "sent"})
        for kind in ("elected", "coord", "view_ack", "rrp", "drop", "invariant")
    ]
    extra.append(_row("two", "B", 5 * MS, "token", detail={"op": "sent"}))
    rows = renumber(rows + extra)
    frame = _frame(spark, rows, "raincore")
    kept = [
        r
        for r in rows
        if r["kind"] in KINDS
        and (r["kind"] != TOKEN or json.loads(r["detail"] or "{}").get("op") in TOKEN_OPS)
    ]
    assert {"drop", "invariant", TOKEN} <= {r["kind"] for r in kept}
    assert not {"elected", "coord", "view_ack", "rrp"} & {r["kind"] for r in kept}
    small = [r for r in kept if r["kind"] not in ("deliver", "submit")]
    for ctx, expected in (
        (CheckContext(frame), kept),
        (CheckContext(frame, delivery_runs=frozenset()), small),
    ):
        try:
            got = sorted(
                (r.run, r.node, r.i) for r in ctx.rows.select("run", "node", "i").collect()
            )
            assert got == sorted((r["run"], r["node"], r["i"]) for r in expected)
        finally:
            ctx.close()


def test_a_context_without_deliveries_reads_no_message_columns(spark: Any, tmp_path: Any) -> None:
    """Only deliveries and submits have a ``msg`` and an ``order``: a context that keeps
    none leaves both out of its scan of the trace files and null in its rows; one that
    keeps the deliveries of some runs reads them for those rows only."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from ringcast.lab.checks.context import MESSAGE_COLUMNS
    from ringcast.lab.load import load_traces

    path = tmp_path / "trace.parquet"
    pq.write_table(to_table(steady("one") + steady("two")), path)
    frame = load_traces(spark, [path], protocol=RUN_SCOPED)

    def read(ctx: CheckContext) -> list[str]:
        """The read schema of each scan in the rows' plan, not cut short."""
        conf = spark.conf
        before = conf.get(LONGEST)
        conf.set(LONGEST, "100000")
        try:
            plan = ctx.rows._jdf.queryExecution().executedPlan().toString()
        finally:
            conf.set(LONGEST, before)
        return [part.split("\n")[0] for part in plan.split("ReadSchema: struct<")[1:]]

    for runs, scans in ((None, 1), (frozenset(), 1), (frozenset({"two"}), 2)):
        ctx = CheckContext(frame, delivery_runs=runs)
        try:
            schemas = read(ctx)
            assert len(schemas) == scans, schemas
            for name in MESSAGE_COLUMNS:
                assert (f"{name}:" in schemas[-1]) == (runs != frozenset()), schemas
                if runs is not None:
                    assert f"{name}:" not in schemas[0]
            with_msg = ctx.rows.filter(F.col("msg").isNotNull())
            kept = {(r.run, r.kind) for r in with_msg.select("run", "kind").distinct().collect()}
            expected = {(run, k) for run in ("one", "two") for k in ("deliver", "submit")}
            if runs is not None:
                expected = {(run, k) for run, k in expected if run in runs}
            assert kept == expected
        finally:
            ctx.close()


def test_protocol_kinds_are_never_taken_for_deliveries_or_submits(spark: Any) -> None:
    """Deliveries and submits are matched by their full names: a protocol's own kind as
    long as ``deliver`` (``elected``) with a message in it is no delivery, so its run is
    still certified and holds; one as long as ``submit`` (``signal``) does not vouch for
    a message, whose run fails and integrity's exact check reports it never sent."""
    odd = steady("odd")
    extra = dict(_delivered(odd, "B")[3], kind="elected", order=None, t=10_000 * MS)
    odd = renumber([*odd, extra])
    unsent = steady("unsent")
    submit = next(r for r in unsent if r["kind"] == "submit" and r["msg"] == "B:1")
    submit["kind"], submit["order"] = "signal", None
    frame = _frame(spark, steady("clean") + odd + unsent, RUN_SCOPED)
    assert _failed(frame, 2) == {"unsent"}
    claims = {RUN_SCOPED: ("total_order", "fifo", "integrity")}
    by = {r.property: r for r in run_checks(frame, overrides=claims, partitions=2)}
    assert by["total_order"].runs_certified == 2 and by["total_order"].violations == 0
    assert by["fifo"].violations == 0
    assert {(c["run"], tuple(c["msgs"])) for c in by["integrity"].counterexamples} == {
        ("unsent", ("B:1",))
    }


def test_the_certificate_runs_in_its_own_pool(spark: Any, monkeypatch: Any) -> None:
    """The session schedules fairly and the certificate's jobs go to their own pool, so
    that the checks beside it get task slots; the caller's thread stays out of it but
    plans the certificate, so that its job starts before the others are planned."""
    import threading

    from ringcast.lab.checks import runner

    assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
    pools: list[str | None] = []
    planned_on: list[str] = []
    order: list[str] = []
    run = certify.Certificate.failed_runs
    plan, exact = runner.certificate, runner._exact

    def spy(self: Any) -> set[str]:
        pools.append(spark.sparkContext.getLocalProperty(runner.POOL))
        return run(self)

    def planner(trace: Any, layout: Any) -> Any:
        planned_on.append(threading.current_thread().name)
        order.append("certificate")
        return plan(trace, layout)

    def round_(*args: Any) -> None:
        order.append("round")
        exact(*args)

    monkeypatch.setattr(certify.Certificate, "failed_runs", spy)
    monkeypatch.setattr(runner, "certificate", planner)
    monkeypatch.setattr(runner, "_exact", round_)
    frame = _frame(spark, steady("clean"), RUN_SCOPED)
    results = {r.property: r for r in rounds_checks(frame, overrides={RUN_SCOPED: PROPERTIES})}
    assert pools == [runner.CERTIFICATE_POOL]
    # planned on the caller's thread, before the other checks are: run in the pool's
    assert planned_on == [threading.current_thread().name]
    assert order[0] == "certificate" and "round" in order
    assert results["total_order"].runs_certified == 1
    assert spark.sparkContext.getLocalProperty(runner.POOL) is None


def test_nodes_sharing_a_window_only_fail_their_runs(spark: Any, monkeypatch: Any) -> None:
    """Two nodes of a run whose node hashes collide share one window: their deliveries
    are numbered together. Forcing every node of every run to collide, no run is
    certified (labels no longer count from 0 per node) and the verdicts are those of
    the exact checks alone: a collision can cost completeness, never soundness."""
    from pyspark.sql import functions as F

    rows = steady("clean") + swapped(steady("bad")) + duplicated(steady("dup"))
    frame = _frame(spark, rows, RUN_SCOPED)
    assert _failed(frame, 2) == {"bad", "dup"}
    monkeypatch.setattr(certify, "node_key", lambda: F.lit(7).cast("long"))
    assert _failed(frame, 2) == {"clean", "bad", "dup"}
    claims = {RUN_SCOPED: PROPERTIES}
    assert all(r.runs_certified == 0 for r in _agree(frame, claims, 100))


def test_equal_counters_are_not_ordered_but_smaller_ones_are(spark: Any) -> None:
    """Two messages of one sender with equal counters (``A:02`` and ``A:2``) may be
    delivered in either order: fifo ignores their mutual order and so does the
    certificate. A smaller counter delivered after both (``A:001``, last) breaks fifo:
    that run fails the certificate, and the exact check finds it."""
    rows = []
    for run, renames in (("ties", {"A:1": "A:02"}), ("late", {"A:1": "A:02", "A:3": "A:001"})):
        part = steady(run)
        for r in part:
            r["msg"] = renames.get(r["msg"], r["msg"])
        rows += part
    frame = _frame(spark, rows, RUN_SCOPED)
    assert _failed(frame, 1) == {"late"}
    claims = {RUN_SCOPED: PROPERTIES}
    checked = run_checks(frame, overrides=claims, partitions=1, properties=certify.CERTIFIED)
    by = {r.property: r for r in checked}
    assert by["fifo"].runs_certified == 1
    assert {c["run"] for c in by["fifo"].counterexamples} == {"late"}
    assert by["total_order"].runs_certified == 1  # "late" fails as a whole run


def test_rows_without_a_node_send_their_run_to_the_exact_checks(spark: Any) -> None:
    """A row with no node cannot be placed in the layout: its run fails the
    certificate (no error) and so takes the exact path; the other runs are proved."""
    from pyspark.sql import functions as F

    frame = _frame(spark, steady("clean") + steady("nameless"), RUN_SCOPED)
    lost = (F.col("run") == "nameless") & (F.col("node") == "B") & (F.col("i") == 5)
    frame = frame.withColumn("node", F.when(~lost, F.col("node")))
    assert frame.filter(F.col("node").isNull()).count() == 1
    assert _failed(frame, 2) == {"nameless"}


def test_small_frames_are_local_relations(spark: Any) -> None:
    """The driver's small tables (the certificate's layout, the runs a round reads,
    the runs' ends) are local relations: broadcasting one runs no Spark job."""
    from ringcast.lab.checks.context import small_frame

    frame = small_frame(spark, [("a", 1), (None, -(1 << 63))], "run string, tmax long")
    assert frame._jdf.queryExecution().analyzed().nodeName() == "LocalRelation"
    assert frame.schema.simpleString() == "struct<run:string,tmax:bigint>"
    assert [tuple(r) for r in frame.collect()] == [("a", 1), (None, -(1 << 63))]
    assert small_frame(spark, [], "run string").collect() == []
    longs = small_frame(spark, [(1, None), (None, 1 << 62)], "a long, b long")
    assert [tuple(r) for r in longs.collect()] == [(1, None), (None, 1 << 62)]


def test_the_certificate_decides_nothing_but_its_three_properties(spark: Any) -> None:
    """A node that stops delivering before the others keeps their common order, so its
    run passes the certificate; it still misses messages before the next configuration,
    which virtual_synchrony (not one of the certificate's properties) must report."""
    rows = steady("tail")
    late = 1000 * MS
    rows += [
        _row("tail", n, late, "view", view="v2", members=list(NODES), transitional=False)
        for n in NODES
    ]
    rows = renumber([r for r in rows if r not in _delivered(rows, "D")[-2:]])
    frame = _frame(spark, rows, RUN_SCOPED)
    assert _failed(frame, 1) == set()
    claims = {RUN_SCOPED: PROPERTIES}
    checked = run_checks(
        frame, overrides=claims, partitions=1, properties=("total_order", "virtual_synchrony")
    )
    by = {r.property: r for r in checked}
    assert by["total_order"].runs_certified == 1
    assert by["virtual_synchrony"].status == "violated"
    assert {tuple(c["msgs"]) for c in by["virtual_synchrony"].counterexamples} == {
        ("C:3",),
        ("D:3",),
    }


def test_the_certificate_shuffles_its_rows_once(shapes: Any) -> None:
    """One shuffle, by run: the per-node window, the per-message aggregation and the
    per-sender maximum all read its partitioning (the layout's run numbers are a
    broadcast, not a shuffle)."""
    layout = plan_layout(CheckContext(shapes).run_nodes, 3)
    planned = certify.certificate(shapes, layout)
    assert planned.frame is not None
    plan = planned.frame._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange hashpartitioning") == 1, plan
    assert "BroadcastExchange" in plan
