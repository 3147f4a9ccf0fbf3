"""integrity: no node delivers a message twice, and every delivered message was sent
(has a ``submit`` row in its run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "integrity"
DESCRIPTION = "no (node, message) delivered twice; every delivered message has a submit row"


def inputs(protocol: str) -> set[str]:
    return {"deliver"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    d = ctx.deliveries.filter(in_protocols(protocols)).select("run", "protocol", "node", "msg", "t")
    # count with a hash aggregation first; the times are collected for the few repeats only
    key = ["run", "protocol", "node", "msg"]
    repeated = d.groupBy(*key).count().filter(F.col("count") > 1).select(*key)
    dups = (
        d.join(repeated, key)
        .groupBy(*key)
        .agg(F.count("*").alias("n"), F.array_sort(F.collect_list("t")).alias("ts"))
        .select(
            *violation(
                "run",
                "protocol",
                F.col("ts")[1],
                F.array("node"),
                F.array("msg"),
                None,
                F.col("ts"),
                F.concat(
                    F.lit("delivered "), F.col("n").cast("string"), F.lit(" times at one node")
                ),
            )
        )
    )
    subs = ctx.kind("submit").filter(in_protocols(protocols))
    both = d.select("run", "protocol", "msg", "node", "t", F.lit(0).alias("sent")).unionByName(
        subs.select("run", "protocol", "msg", "node", "t", F.lit(1).alias("sent"))
    )
    never = (
        both.groupBy("run", "protocol", "msg")
        .agg(F.max("sent").alias("sent"))
        .filter(F.col("sent") == 0)
        .drop("sent")
    )
    unsent = (
        d.join(never, ["run", "protocol", "msg"])
        .groupBy("run", "protocol", "msg")
        .agg(F.array_sort(F.collect_set("node")).alias("nodes"), F.min("t").alias("t"))
        .select(
            *violation(
                "run",
                "protocol",
                F.col("t"),
                F.col("nodes"),
                F.array("msg"),
                None,
                F.array("t"),
                F.lit("delivered but never submitted"),
            )
        )
    )
    return dups.unionByName(unsent)
