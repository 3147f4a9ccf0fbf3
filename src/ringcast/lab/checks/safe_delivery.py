"""safe_delivery: a message delivered with order ``safe`` at a node was delivered by
every member of the configuration (regular or transitional) the node delivered it
in, unless that member crashed or left after the node installed that configuration, or
the run ended less than ``CheckContext.safe_grace`` (default 500 ms) after the
delivery (the member may have received it and not delivered it yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "safe_delivery"
DESCRIPTION = "a safe message was delivered by every member of its configuration that did not crash"


def inputs(protocol: str) -> set[str]:
    return {"deliver:safe"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    safe = ctx.deliveries.filter(in_protocols(protocols) & (F.col("order") == "safe"))
    per_msg = Window.partitionBy("run", "msg")
    safe = safe.withColumn("got", F.collect_set("node").over(per_msg))
    safe = safe.filter(F.col("cur.members").isNotNull())
    crashes = (
        ctx.kind("fault")
        .filter(in_protocols(protocols) & F.col("action").isin("crash", "leave"))
        .groupBy("run")
        .agg(F.collect_list(F.struct("node", "t")).alias("crashes"))
    )
    ends = F.broadcast(ctx.run_ends())
    safe = safe.join(ends, "run").filter(F.col("t") + F.lit(ctx.safe_grace) <= F.col("tmax"))
    joined = safe.join(crashes, "run", "left").withColumn(
        "missing",
        F.expr(
            "filter(cur.members, m -> NOT array_contains(got, m) AND NOT exists("
            "coalesce(crashes, array()), c -> c.node = m AND c.t >= cur.vt))"
        ),
    )
    bad = joined.filter(F.size("missing") > 0)
    note = F.concat(
        F.lit("safe message delivered at "),
        F.col("node"),
        F.lit(" in configuration "),
        F.coalesce(F.col("cur.view"), F.lit("?")),
        F.lit(" but never by "),
        F.array_join(F.array_sort("missing"), ","),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.concat(F.array("node"), F.array_sort("missing")),
            F.array("msg"),
            F.array(F.col("cur.view")),
            F.array("cur.vt", "t"),
            note,
        )
    )
