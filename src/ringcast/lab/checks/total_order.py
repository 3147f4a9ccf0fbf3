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
between neighbours: a linear pass, no pair of nodes is formed.

A scope without such a complete node (crashes, late joiners: no node delivered every
message) is first tested for a common order: the *precedence graph* has an edge from
each delivery of a node to its next one. If p delivers a before b and q delivers b
before a, the graph holds a path from a to b (p's) and one from b to a (q's): a cycle.
So a scope whose graph has no cycle has no violation, exactly, and nothing more is
done for it; the test is one topological sort per scope (Kahn's algorithm, in the
executors: :func:`acyclic_scopes`), linear in the scope's deliveries. Only the scopes
with a cycle (a protocol that broke total order, or nodes whose orders cannot be merged
though no two of them disagree) go on to every pair of nodes that delivered a message
(its index at each), checked as against the reference, for the counterexamples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    # other scopes: those whose precedence graph has a cycle, every pair of nodes that
    # delivered a message
    incomplete = first.filter(~F.col("complete"))
    cyclic = acyclic_scopes(incomplete).filter(~F.col("acyclic")).select("run", "scope")
    rows = against.unionByName(pairwise(incomplete.join(cyclic, ["run", "scope"])))
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


def pairwise(first: DataFrame) -> DataFrame:
    """Every pair of nodes that delivered a message of ``first`` (each node's first
    delivery of it): one row a pair and message, the two nodes' indexes and times."""
    from pyspark.sql import functions as F

    per_msg = (
        first.groupBy("run", "protocol", "scope", "msg")
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
    return rows


def acyclic_scopes(first: DataFrame) -> DataFrame:
    """Per (run, scope) of ``first`` (each node's first delivery of each message, with
    its event index ``i``): ``acyclic``, whether the precedence graph (an edge from each
    of a node's deliveries to its next) has no cycle. One sort per (run, scope, node) for
    the edges, then Kahn's algorithm per scope in the executors (``applyInPandas``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("run", "scope", "node").orderBy("i")
    edges = first.select("run", "scope", F.lag("msg").over(w).alias("a"), F.col("msg").alias("b"))
    return edges.groupBy("run", "scope").applyInPandas(
        _kahn, "run string, scope string, acyclic boolean"
    )


def _kahn(edges: Any) -> Any:
    """One scope's ``a -> b`` edges (``a`` null: a node's first delivery) as a pandas
    frame; one row: whether every message can be put in one order that keeps them."""
    import pandas as pd

    succ: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    for a, b in zip(edges["a"], edges["b"], strict=True):
        indegree.setdefault(b, 0)
        if a is None or isinstance(a, float):  # null (pandas may give NaN)
            continue
        indegree.setdefault(a, 0)
        succ.setdefault(a, []).append(b)
        indegree[b] += 1
    ready = [m for m, d in indegree.items() if d == 0]
    placed = 0
    while ready:
        m = ready.pop()
        placed += 1
        for n in succ.get(m, ()):
            indegree[n] -= 1
            if indegree[n] == 0:
                ready.append(n)
    return pd.DataFrame(
        {
            "run": [edges["run"].iloc[0]],
            "scope": [edges["scope"].iloc[0]],
            "acyclic": [placed == len(indegree)],
        }
    )
