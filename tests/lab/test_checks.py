"""The property checks on synthetic traces: claims and absent inputs decide
applicability, and fenced locks are told apart. That each corruption of the catalogue
breaks exactly its property, with a counterexample pointing at it, is checked beside
the plain reference (``test_reference.py``)."""

from __future__ import annotations

from typing import Any

from lab_traces import MUTATIONS, clean_trace, to_table

from ringcast.lab.checks import run_checks
from ringcast.lab.checks.runner import HOLDS, NOT_APPLICABLE, VIOLATED
from ringcast.lab.properties import PROPERTIES

ALL = {"totem": PROPERTIES}


def _frame(spark: Any, rows: list[dict[str, Any]], protocol: str = "totem") -> Any:
    from pyspark.sql import functions as F

    return (
        spark.createDataFrame(to_table(rows))
        .withColumn("protocol", F.lit(protocol))
        .withColumn("scenario", F.lit("synthetic"))
    )


def test_claims_and_absent_inputs_make_not_applicable(spark: Any) -> None:
    # basic does not claim total order: a swap is not reported; a trace without lock
    # rows leaves mutual exclusion without inputs even when claimed.
    fn, _ = MUTATIONS["swap"]
    rows, _ = fn(clean_trace("b"))
    rows = [r for r in rows if r["kind"] != "lock"]
    by = {
        r.property: r
        for r in run_checks(
            _frame(spark, rows, protocol="basic"),
            properties=["total_order", "integrity", "mutual_exclusion"],
        )
    }
    assert by["total_order"].status == NOT_APPLICABLE
    assert by["total_order"].protocols["basic"]["claimed"] is False
    assert by["integrity"].status == HOLDS and by["integrity"].runs_checked == 1
    assert by["mutual_exclusion"].status == NOT_APPLICABLE
    by = {
        r.property: r
        for r in run_checks(
            _frame(spark, rows, protocol="basic"),
            properties=["total_order", "mutual_exclusion"],
            overrides={"basic": PROPERTIES},
        )
    }
    assert by["total_order"].status == VIOLATED
    assert by["mutual_exclusion"].status == NOT_APPLICABLE


def _fence(rows: list[dict[str, Any]], fences: dict[str, int]) -> list[dict[str, Any]]:
    """Give each node's lock grant the fencing token in ``fences``."""
    import json

    for r in rows:
        if r["kind"] == "lock" and r["node"] in fences:
            d = json.loads(r["detail"])
            if d["op"] == "granted":
                r["detail"] = json.dumps({"op": "granted", "fence": fences[r["node"]]})
    return rows


def test_overlapping_holds_with_distinct_fences_are_the_fenced_limit(spark: Any) -> None:
    from lab_traces import overlapping_locks

    fenced, _ = overlapping_locks(clean_trace("fenced"))
    same, _ = overlapping_locks(clean_trace("same_fence"))
    unfenced, _ = overlapping_locks(clean_trace("unfenced"))
    half, _ = overlapping_locks(clean_trace("half"))
    rows = (
        _fence(fenced, {"A": 5, "B": 9})  # a resource refuses A's writes once it saw 9
        + _fence(same, {"A": 7, "B": 7})  # one fence granted twice: no resource can tell
        + unfenced  # a protocol that gives no fence: the strict rule
        + _fence(half, {"A": 0, "B": 9})
    )
    results = run_checks(
        _frame(spark, rows, "raincore"),
        overrides={"raincore": ["mutual_exclusion"]},
        examples=100,
    )
    me = {r.property: r for r in results}["mutual_exclusion"]
    assert me.status == VIOLATED
    assert {c["run"] for c in me.counterexamples} == {"same_fence", "unfenced", "half"}
