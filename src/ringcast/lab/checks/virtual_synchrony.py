"""virtual_synchrony: nodes that install the same two consecutive regular
configurations (v1 then v2, across a transitional one for Totem) delivered the same
set of messages in between.

A node's segment (v1, v2) holds the deliveries made after it installed v1 and before
it installed v2; a crash, restart, join or leave ends the segment without a v2, so a
crashed node is held to nothing. For each (v1, v2) the nodes that made that
transition are collected; every message one of them delivered in the segment must
have been delivered in it by all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "virtual_synchrony"
DESCRIPTION = (
    "nodes moving together from one regular configuration to the next delivered the same "
    "messages in between"
)


def inputs(protocol: str) -> set[str]:
    return {"view"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    trans = ctx.kind("view").filter(
        in_protocols(protocols)
        & ~F.coalesce(F.col("transitional"), F.lit(False))
        & F.col("prev_reg").isNotNull()
    )
    groups = trans.groupBy(
        "run", "protocol", F.col("prev_reg").alias("v1"), F.col("view").alias("v2")
    ).agg(F.collect_set("node").alias("movers"), F.max("t").alias("t2"))
    seg = ctx.deliveries.filter(
        in_protocols(protocols) & F.col("prev_reg").isNotNull() & F.col("next_reg").isNotNull()
    )
    got = seg.groupBy(
        "run", F.col("prev_reg").alias("v1"), F.col("next_reg").alias("v2"), "msg"
    ).agg(F.collect_set("node").alias("got"), F.min("t").alias("t"))
    joined = got.join(groups, ["run", "v1", "v2"]).withColumn(
        "missing", F.array_sort(F.array_except("movers", "got"))
    )
    bad = joined.filter(F.size("missing") > 0)
    note = F.concat(
        F.lit("delivered by "),
        F.array_join(F.array_sort("got"), ","),
        F.lit(" but not by "),
        F.array_join("missing", ","),
        F.lit(" between configurations "),
        F.col("v1"),
        F.lit(" and "),
        F.col("v2"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.concat(F.array_sort("got"), F.col("missing")),
            F.array("msg"),
            F.array("v1", "v2"),
            F.array("t", "t2"),
            note,
        )
    )
