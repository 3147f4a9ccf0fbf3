"""Which nodes of a real cluster's trace are judged crashed where their traces end."""

from __future__ import annotations

from typing import Any

from lab_traces import MS, _row, renumber, to_table

from ringcast.lab.checks import run_checks
from ringcast.lab.checks.context import JudgedCrash, NodeInfo, judged_crashes
from ringcast.lab.checks.runner import HOLDS


def node(run: str, name: str, tmax: int, clean: bool, states: bool = False) -> NodeInfo:
    return NodeInfo(run, "totem", name, 0, 0, 10, tmax, clean, states)


def test_a_stopped_cluster_s_node_without_a_clean_end_is_judged_crashed() -> None:
    nodes = [node("r", "n1", 900, True), node("r", "n2", 400, False), node("r", "n3", 910, True)]
    assert judged_crashes(nodes) == [JudgedCrash("r", "n2", 400)]
    assert "n2's trace ends at t=0.000ms without a clean stop" in judged_crashes(nodes)[0].note()


def test_a_running_cluster_or_a_simulation_is_not_judged() -> None:
    running = [node("r", "n1", 900, False), node("r", "n2", 400, False)]
    assert judged_crashes(running) == []
    simulated = [node("s", "A", 900, True, True), node("s", "B", 400, False, True)]
    assert judged_crashes(simulated) == []
    # runs are judged apart
    stopped = [node("q", "n1", 5, True), node("q", "n2", 3, False)]
    assert judged_crashes(running + simulated + stopped) == [JudgedCrash("q", "n2", 3)]


def _killed_while_holding(run: str, hold: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """A stopped three-node Raincore cluster whose n2 was killed while it held the token
    or the lock (``hold``, its last row: its trace ends there, without a stats row); n1
    and n3 hold it after, one at a time, and stop cleanly."""
    nodes = ("n1", "n2", "n3")
    rows = [_row(run, n, 0, "view", view="1", members=list(nodes)) for n in nodes]
    rows.append(_row(run, "n2", 10 * MS, kind, detail=hold))
    release = {"op": "released", "reason": "done"} if kind == "lock" else {"token_state": "hungry"}
    for k, n in enumerate(("n1", "n3")):
        rows.append(_row(run, n, (20 + 10 * k) * MS, kind, detail=hold))
        rows.append(_row(run, n, (25 + 10 * k) * MS, kind, detail=release))
    rows += [_row(run, n, 100 * MS, "stats", detail={"sent": 1}) for n in ("n1", "n3")]
    return rows


def test_a_node_killed_while_it_held_the_token_or_the_lock_holds_it_no_longer(
    spark: Any,
) -> None:
    from pyspark.sql import functions as F

    eating = {"token_state": "eating", "view_state": "agreement"}
    granted = {"op": "granted", "fence": 0}
    for prop, hold, kind in (
        ("single_token", eating, "state"),
        ("mutual_exclusion", granted, "lock"),
    ):
        frame = (
            spark.createDataFrame(to_table(renumber(_killed_while_holding("k", hold, kind))))
            .withColumn("protocol", F.lit("raincore"))
            .withColumn("scenario", F.lit("synthetic"))
        )
        judged: list[JudgedCrash] = []
        (result,) = run_checks(frame, properties=[prop], judged=judged)
        assert judged == [JudgedCrash("k", "n2", 10 * MS)]
        assert result.status == HOLDS, (prop, result.counterexamples)
