"""total_order at scale with crashes: 100 members, each crashing at a different point,
so that no node delivers every message. The exact check first finds each scope's
precedence graph's cycles (topological sorts, linear in the deliveries) and forms pairs
only on their messages, between one node of each class of nodes that delivered them
alike: a correct run of 100 members touches no pair (it once formed about 5,000 pairs a
message), and a swapped pair of deliveries at one node is still found, between the
nodes that disagree."""

from __future__ import annotations

import random
from typing import Any

import pytest
from lab_traces import _row, renumber, to_table

from ringcast.lab.checks import run_checks, total_order
from ringcast.lab.checks.runner import VIOLATED
from ringcast.lab.checks.total_order import cyclic_core, pairwise

MEMBERS = [f"n{k:03d}" for k in range(100)]
MESSAGES = 200
MS = 1_000_000


def crashing_run(run: str, seed: int = 3) -> list[dict[str, Any]]:
    """One order of MESSAGES multicasts; member k delivers a window of it (joins late,
    crashes early) less one message (lost): nobody delivers them all."""
    rng = random.Random(seed)
    rows = []
    for m in range(MESSAGES):
        sender = rng.choice(MEMBERS)
        rows.append(_row(run, sender, m * MS, "submit", msg=f"{sender}:{m + 1}", order="agreed"))
    for k, node in enumerate(MEMBERS):
        lo = k % 7
        hi = MESSAGES - 1 - (k % 11)
        for m in range(lo, hi):
            if m == 50 + k:  # and each misses one message of its own: none has them all
                continue
            sender = rows[m]["node"]
            rows.append(
                _row(
                    run, node, m * MS + MS // 2, "deliver", msg=f"{sender}:{m + 1}", order="agreed"
                )
            )
    return renumber(rows)


def _first(spark: Any, rows: list[dict[str, Any]]) -> Any:
    from pyspark.sql import functions as F

    d = spark.createDataFrame(to_table(rows)).filter(F.col("kind") == "deliver")
    return d.select("run", F.lit("").alias("scope"), "node", "msg", "i")


def _frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.createDataFrame(to_table(rows))
        .withColumn("protocol", F.lit("raincore"))
        .withColumn("scenario", F.lit("synthetic"))
    )


def _swap(rows: list[dict[str, Any]], node: str, a: int, b: int) -> list[dict[str, Any]]:
    """``node`` delivers its a-th and b-th deliveries the other way round."""
    mine = [r for r in rows if r["node"] == node and r["kind"] == "deliver"]
    mine[a]["msg"], mine[b]["msg"] = mine[b]["msg"], mine[a]["msg"]
    return rows


def test_a_correct_run_without_a_complete_node_has_no_core(spark: Any) -> None:
    rows = crashing_run("ok")
    assert cyclic_core(_first(spark, rows)).collect() == []
    # n042 delivers messages 1..190 but 93; its 11th and 21st deliveries swapped: the
    # messages it delivered from the one to the other are on a cycle, nothing else
    swapped = _swap(crashing_run("bad"), "n042", 10, 20)
    core = cyclic_core(_first(spark, swapped)).collect()
    assert {r["run"] for r in core} == {"bad"}
    assert sorted(int(r["msg"].split(":")[1]) for r in core) == list(range(11, 22))


def test_the_exact_check_forms_pairs_only_for_a_run_whose_order_has_a_cycle(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One check of a correct run and a broken one. The deliveries handed to the pair
    stage: none of the correct run's, and of the broken run's only its core (11
    messages) at one node of each class: n042, and one of the 99 others, which
    delivered them alike. The swap is found, between n042 and another node; the
    correct run holds."""
    handed: list[Any] = []

    def recording(first: Any) -> Any:
        handed.append(first)
        return pairwise(first)

    monkeypatch.setattr(total_order, "pairwise", recording)
    rows = crashing_run("ok") + _swap(crashing_run("bad"), "n042", 10, 20)
    results = run_checks(
        _frame(spark, rows), overrides={"raincore": ["total_order"]}, certify=False
    )
    (first,) = handed
    by_run = {r["run"]: r["count"] for r in first.groupBy("run").count().collect()}
    assert "ok" not in by_run
    assert by_run["bad"] == 2 * 11
    (to,) = [r for r in results if r.property == "total_order"]
    assert to.status == VIOLATED and to.runs_checked == 2
    assert to.violated_runs == ["bad"]
    assert {c["run"] for c in to.counterexamples} == {"bad"}
    assert all("n042" in c["nodes"] for c in to.counterexamples)
