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
before a, the graph holds a path from a to b (p's) and one from b to a (q's): a and b
lie on one cycle. So a scope whose graph has no cycle has no violation, exactly, and
nothing more is done for it. The test is Kahn's algorithm run forwards and backwards
per scope, in the executors (:func:`cyclic_core`), linear in the scope's deliveries:
the messages neither run can place (reachable from a cycle and reaching one) are the
scope's *core*, which holds every message on a cycle.

Only the core goes on to every pair of nodes that delivered a message (its index at
each), checked as against the reference, for the counterexamples; the counterexamples
are the same as over all of the scope's messages. A disagreement's two messages lie on
one cycle, so both are in the core; and a message x that p delivered between two core
messages u and v that q delivered the other way round lies on their cycle too (u to x
to v by p's edges, v to u by q's), so dropping the messages outside the core makes no
two messages neighbours in a node's order that were not, where it matters. A correct
run forms no pair whatever its crashes; a broken one forms pairs on its cycles' messages
only (a node that swapped two deliveries: the messages it delivered between them).
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
    w = Window.partitionBy("run", "scope", "p", "q").orderBy("pi")
    seq = against.withColumns({f"prev_{c}": F.lag(c).over(w) for c in ("qi", "msg", "pt", "qt")})
    cols = [
        "run",
        "protocol",
        "scope",
        "p",
        "q",
        "prev_msg",
        "msg",
        "prev_pt",
        "pt",
        "qt",
        "prev_qt",
    ]
    bad = seq.filter(F.col("qi") < F.col("prev_qi")).select(*cols)
    # other scopes: the core of those whose precedence graph has a cycle
    incomplete = first.filter(~F.col("complete"))
    core = incomplete.join(cyclic_core(incomplete), ["run", "scope", "msg"], "left_semi")
    bad = bad.unionByName(core_disagreements(core).select(*cols))
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


def core_disagreements(core: DataFrame) -> DataFrame:
    """Every pair of nodes p < q of ``core`` (each node's first delivery of each core
    message: run, protocol, scope, msg, node, i, t) and two messages they both delivered,
    neighbours in p's order of those, that q delivered the other way round: one row each
    (p, q, prev_msg, msg and the four times).

    Nodes that delivered the same core messages in the same order (a *class*) disagree
    with no one of their class and in the same way with any other node, so the pairs are
    formed between one node of each class (:func:`pairwise`, in both directions) and
    only the disagreements are expanded to the classes' nodes: a correct node's class
    holds every node that delivered what it did, and one node that swapped two
    deliveries costs the messages between them times its own class and one other, not
    times every pair of nodes."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    scope = ["run", "scope"]
    ordered = F.array_sort(F.collect_list(F.struct("i", "msg")))
    classes = (
        core.groupBy(*scope, "node")
        .agg(F.array_join(F.transform(ordered, lambda x: x["msg"]), "\u0001").alias("sig"))
        .withColumn("rep", F.min("node").over(Window.partitionBy(*scope, "sig")))
        .select(*scope, "node", "rep")
    )
    reps = core.join(classes.filter(F.col("node") == F.col("rep")), [*scope, "node"], "left_semi")
    one = pairwise(reps)
    both = one.unionByName(
        one.select(
            "run",
            "protocol",
            "scope",
            "msg",
            *(F.col(a).alias(b) for a, b in (("q", "p"), ("qi", "pi"), ("p", "q"), ("pi", "qi"))),
            F.col("qt").alias("pt"),
            F.col("pt").alias("qt"),
        )
    )
    w = Window.partitionBy(*scope, "p", "q").orderBy("pi")
    seq = both.withColumns({f"prev_{c}": F.lag(c).over(w) for c in ("qi", "msg")})
    flips = seq.filter(F.col("qi") < F.col("prev_qi")).select(
        *scope, "protocol", F.col("p").alias("cp"), F.col("q").alias("cq"), "prev_msg", "msg"
    )
    members = classes.select(*scope, "node", "rep")
    expanded = (
        flips.join(members.withColumnsRenamed({"node": "p", "rep": "cp"}), [*scope, "cp"])
        .join(members.withColumnsRenamed({"node": "q", "rep": "cq"}), [*scope, "cq"])
        .filter(F.col("p") < F.col("q"))
    )
    times = core.select(*scope, "node", "msg", "t")
    for who in ("p", "q"):
        for m, name in (("prev_msg", f"prev_{who}t"), ("msg", f"{who}t")):
            expanded = expanded.join(
                times.withColumnsRenamed({"node": who, "msg": m, "t": name}), [*scope, who, m]
            )
    return expanded


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


def cyclic_core(first: DataFrame) -> DataFrame:
    """Per (run, scope) of ``first`` (each node's first delivery of each message, with
    its event index ``i``): the messages of its *core* (run, scope, msg), none for a
    scope whose precedence graph (an edge from each of a node's deliveries to its next)
    has no cycle. One sort per (run, scope, node) for the edges, then Kahn's algorithm
    forwards and backwards per scope in the executors (``applyInPandas``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("run", "scope", "node").orderBy("i")
    edges = first.select("run", "scope", F.lag("msg").over(w).alias("a"), F.col("msg").alias("b"))
    return edges.groupBy("run", "scope").applyInPandas(
        _core, "run string, scope string, msg string"
    )


def _unplaced(succ: dict[str, list[str]], indegree: dict[str, int]) -> set[str]:
    """Kahn's algorithm on a graph: the vertices no topological order can place (those
    on a cycle or reachable from one). ``indegree`` is consumed."""
    ready = [m for m, d in indegree.items() if d == 0]
    placed: set[str] = set()
    while ready:
        m = ready.pop()
        placed.add(m)
        for n in succ.get(m, ()):
            indegree[n] -= 1
            if indegree[n] == 0:
                ready.append(n)
    return set(indegree) - placed


def _core(edges: Any) -> Any:
    """One scope's ``a -> b`` edges (``a`` null: a node's first delivery) as a pandas
    frame; one row per message of the scope's core (none when it has no cycle)."""
    import pandas as pd

    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    outdegree: dict[str, int] = {}
    for a, b in zip(edges["a"], edges["b"], strict=True):
        indegree.setdefault(b, 0)
        outdegree.setdefault(b, 0)
        if a is None or isinstance(a, float):  # null (pandas may give NaN)
            continue
        indegree.setdefault(a, 0)
        outdegree.setdefault(a, 0)
        succ.setdefault(a, []).append(b)
        pred.setdefault(b, []).append(a)
        indegree[b] += 1
        outdegree[a] += 1
    core = _unplaced(succ, indegree)
    if core:
        core &= _unplaced(pred, outdegree)
    msgs = sorted(core)
    return pd.DataFrame(  # strings even when empty (an empty frame's default: floats)
        {
            "run": pd.Series([edges["run"].iloc[0]] * len(msgs), dtype=object),
            "scope": pd.Series([edges["scope"].iloc[0]] * len(msgs), dtype=object),
            "msg": pd.Series(msgs, dtype=object),
        }
    )
