"""leader_agreement: the nodes of one configuration agree on its leader.

``leader`` rows name the leader in ``detail.leader`` (or ``detail.coordinator``);
the configuration is the row's ``view`` or, if empty, the node's current one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "leader_agreement"
DESCRIPTION = "every node names the same leader for one configuration"


def inputs(protocol: str) -> set[str]:
    return {"leader"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    leader = F.coalesce(
        F.get_json_object("detail", "$.leader"), F.get_json_object("detail", "$.coordinator")
    )
    rows = (
        ctx.kind("leader")
        .filter(in_protocols(protocols))
        .withColumns(
            {"leader": leader, "scope": F.coalesce(F.col("view"), F.col("cur.view"), F.lit(""))}
        )
        .filter(F.col("leader").isNotNull())
    )
    per = rows.groupBy("run", "protocol", "scope").agg(
        F.collect_set("leader").alias("leaders"),
        F.array_sort(F.collect_set(F.concat("node", F.lit("->"), F.col("leader")))).alias("by"),
        F.array_sort(F.collect_set("node")).alias("nodes"),
        F.min("t").alias("t"),
        F.max("t").alias("t1"),
    )
    bad = per.filter(F.size("leaders") > 1)
    note = F.concat(F.lit("leaders differ: "), F.array_join("by", " "))
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.col("nodes"),
            None,
            F.array("scope"),
            F.array("t", "t1"),
            note,
        )
    )
