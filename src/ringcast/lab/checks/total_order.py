"""total_order: any two nodes deliver the messages they both delivered in the same
relative order.

The scope of the comparison is one configuration for protocols whose
:func:`~ringcast.lab.properties.order_scope` is ``view`` (Totem), else the whole run.
For each message the first delivery at each node is kept.

Per scope, the node with the most such deliveries is the reference. When it delivered
every message of the scope (the common case), comparing every other node with it alone
is exact: two nodes that both agree with a superset order agree with each other, and a
node that disagrees with it is a violation between the two. Ordered by the message's
index at the reference, each node's own index must only grow, which ``lag`` checks
between neighbours: a linear pass, no pair of nodes is formed. Scopes without such a
complete node fall back to every pair of nodes that delivered a message (its index at
each), checked the same way per pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import (
    CheckContext,
    total_order_filter,
    total_order_inputs,
    violation,
)
from ringcast.lab.properties import order_scope

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
    by_view = sorted(p for p in protocols if order_scope(p) == "view")
    scope = F.lit("")
    if by_view:
        scope = F.when(
            F.col("protocol").isin(*by_view), F.coalesce(F.col("view"), F.col("cur.view"))
        ).otherwise(F.lit(""))
    d = d.withColumn("scope", F.coalesce(scope, F.lit("")))
    # min/min_by keep a hash aggregation (a min over a struct sorts every delivery)
    first = d.groupBy("run", "protocol", "scope", "msg", "node").agg(
        F.min("i").alias("i"), F.min_by("t", "i").alias("t")
    )
    per_scope = (
        first.groupBy("run", "scope", "node")
        .agg(F.count("*").alias("c"))
        .groupBy("run", "scope")
        .agg(F.max(F.struct("c", "node")).alias("ref"))
    )
    msgs = first.groupBy("run", "scope").agg(F.count_distinct("msg").alias("nm"))
    ref = per_scope.join(msgs, ["run", "scope"]).select(
        "run",
        "scope",
        F.col("ref.node").alias("ref"),
        (F.col("ref.c") == F.col("nm")).alias("complete"),
    )
    first = first.join(F.broadcast(ref), ["run", "scope"])  # one row a scope: small
    # complete scopes: every node against the reference
    at_ref = F.max(F.when(F.col("node") == F.col("ref"), F.struct("i", "t"))).over(
        Window.partitionBy("run", "scope", "msg")
    )
    against = (
        first.filter("complete")
        .withColumn("r", at_ref)
        .filter(F.col("node") != F.col("ref"))
        .select(
            "run",
            "protocol",
            "scope",
            "msg",
            F.col("ref").alias("p"),
            F.col("r.i").alias("pi"),
            F.col("r.t").alias("pt"),
            F.col("node").alias("q"),
            F.col("i").alias("qi"),
            F.col("t").alias("qt"),
        )
    )
    # other scopes: every pair of nodes that delivered a message
    per_msg = (
        first.filter(~F.col("complete"))
        .groupBy("run", "protocol", "scope", "msg")
        .agg(F.collect_list(F.struct("node", "i", "t")).alias("ds"))
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
    rows = against.unionByName(rows)
    w = Window.partitionBy("run", "scope", "p", "q").orderBy("pi")
    seq = rows.withColumns({f"prev_{c}": F.lag(c).over(w) for c in ("qi", "msg", "pt", "qt")})
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
