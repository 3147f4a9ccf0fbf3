"""safe_delivery judges only the members that stayed in the configuration.

A run that ends while a member is still on its way out of the configuration a safe
message was delivered in (it installed the configuration, then changed protocol state,
and installed nothing after) holds no verdict on that member: it delivers the message,
or fails, when it installs its next configuration. A member that stayed, or that moved
on to a later configuration, is still judged.
"""

from __future__ import annotations

from typing import Any

from lab_traces import MS, _row, clean_trace, renumber, to_table

from ringcast.lab.checks import run_checks
from ringcast.lab.checks.runner import HOLDS, VIOLATED
from ringcast.lab.properties import PROPERTIES


def _check(spark: Any, rows: list[dict[str, Any]]) -> Any:
    from pyspark.sql import functions as F

    frame = (
        spark.createDataFrame(to_table(renumber(rows)))
        .withColumn("protocol", F.lit("totem"))
        .withColumn("scenario", F.lit("synthetic"))
    )
    (result,) = run_checks(
        frame, overrides={"totem": PROPERTIES}, examples=100, properties=["safe_delivery"]
    )
    return result


def _without_b_delivering(run: str) -> tuple[list[dict[str, Any]], str]:
    """The clean trace with B's delivery of one safe message of v3 removed."""
    rows = clean_trace(run)
    victim = next(
        r
        for r in rows
        if r["kind"] == "deliver"
        and r["node"] == "B"
        and r["t"] >= 500 * MS
        and r["order"] == "safe"
    )
    return [r for r in rows if r is not victim], victim["msg"]


def test_a_member_that_leaves_mid_delivery_is_not_judged(spark: Any) -> None:
    # B installed v3, then left it (token loss: Gather) right after A and C delivered a
    # safe message, and was still gathering a new membership when the run ended.
    rows, _ = _without_b_delivering("leaves")
    rows.append(
        _row(
            "leaves",
            "B",
            505 * MS,
            "state",
            detail={"state": "Gather", "prev": "Operational", "reason": "token loss"},
        )
    )
    assert _check(spark, rows).status == HOLDS


def test_a_member_that_stayed_is_judged(spark: Any) -> None:
    rows, msg = _without_b_delivering("stays")
    result = _check(spark, rows)
    assert result.status == VIOLATED
    assert any(msg in c["msgs"] and "B" in c["nodes"] for c in result.counterexamples)


def test_a_member_that_moved_on_to_a_later_configuration_is_judged(spark: Any) -> None:
    # B left v3 and installed v4 without ever delivering the safe message of v3.
    rows, msg = _without_b_delivering("moves")
    rows.append(
        _row("moves", "B", 505 * MS, "state", detail={"state": "Gather", "prev": "Operational"})
    )
    rows.append(_row("moves", "B", 700 * MS, "view", view="v4", members=["B"], transitional=False))
    result = _check(spark, rows)
    assert result.status == VIOLATED
    assert any(msg in c["msgs"] and "B" in c["nodes"] for c in result.counterexamples)


def test_a_state_change_before_the_install_does_not_excuse(spark: Any) -> None:
    # B's state rows all precede its install of v3 (the clean trace's token states in v1).
    rows, _ = _without_b_delivering("before")
    assert _check(spark, rows).status == VIOLATED
