"""total_order: any two nodes deliver the messages they both delivered in the same
relative order.

The scope of the comparison is one configuration for protocols whose
:data:`~ringcast.lab.properties.ORDER_SCOPE` is ``view`` (Totem), else the whole run.
For each message the first delivery at each node is kept; every pair of nodes that
both delivered it yields a row (the message's rank ``i`` at each); ordered by the
rank at the first node, the rank at the second must only grow, which ``lag`` checks
between neighbours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import (
    CheckContext,
    total_order_filter,
    total_order_inputs,
    violation,
)
from ringcast.lab.properties import ORDER_SCOPE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "total_order"
DESCRIPTION = "messages delivered by two nodes appear in the same relative order at both"


def inputs(protocol: str) -> set[str]:
    return total_order_inputs(protocol)


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    d = ctx.deliveries.filter(total_order_filter(protocols))
    by_view = sorted(p for p in protocols if ORDER_SCOPE.get(p, "run") == "view")
    scope = F.lit("")
    if by_view:
        scope = F.when(
            F.col("protocol").isin(*by_view), F.coalesce(F.col("view"), F.col("cur.view"))
        ).otherwise(F.lit(""))
    d = d.withColumn("scope", F.coalesce(scope, F.lit("")))
    first = d.groupBy("run", "protocol", "scope", "msg", "node").agg(
        F.min(F.struct("i", "t")).alias("f")
    )
    per_msg = (
        first.groupBy("run", "protocol", "scope", "msg")
        .agg(F.collect_list(F.struct("node", "f.i", "f.t")).alias("ds"))
        .filter(F.size("ds") > 1)
    )
    pairs = F.expr(
        "flatten(transform(ds, a -> transform(filter(ds, b -> b.node > a.node),"
        " b -> named_struct('p', a.node, 'pi', a.i, 'pt', a.t,"
        " 'q', b.node, 'qi', b.i, 'qt', b.t))))"
    )
    rows = per_msg.select("run", "protocol", "scope", "msg", F.explode(pairs).alias("x")).select(
        "run", "protocol", "scope", "msg", "x.*"
    )
    w = Window.partitionBy("run", "scope", "p", "q").orderBy("pi")
    seq = (
        rows.withColumn("prev_qi", F.lag("qi").over(w))
        .withColumn("prev_msg", F.lag("msg").over(w))
        .withColumn("prev_pt", F.lag("pt").over(w))
        .withColumn("prev_qt", F.lag("qt").over(w))
    )
    bad = seq.filter(F.col("qi") < F.col("prev_qi"))
    note = F.concat(
        F.col("p"),
        F.lit(" delivered "),
        F.col("prev_msg"),
        F.lit(" before "),
        F.col("msg"),
        F.lit(", "),
        F.col("q"),
        F.lit(" the other way round"),
        F.when(
            F.col("scope") != "", F.concat(F.lit(" (configuration "), F.col("scope"), F.lit(")"))
        ).otherwise(F.lit("")),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.greatest("pt", "prev_qt"),
            F.array("p", "q"),
            F.array("prev_msg", "msg"),
            F.when(F.col("scope") != "", F.array("scope")).otherwise(F.array()),
            F.array("prev_pt", "pt", "qt", "prev_qt"),
            note,
        )
    )
