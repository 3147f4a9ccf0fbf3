"""convergence: after the last fault of a run, every live, connected node is in one
configuration of exactly its live component within a bound, and is never unsettled
longer than that bound after that: the definition of :mod:`ringcast.lab.liveness`,
the same for every family, computed over many runs.

* alive: as :func:`~ringcast.lab.checks._ends.node_ends` says (its ``stats`` row, or
  its last crash/restart/join/leave/pause/resume fault, or a real cluster's node
  judged crashed where its trace ends, which counts as a fault there);
* components: the groups of the run's last ``partition`` fault (nodes in no group
  form one more component) unless a ``heal`` came after it; else one component;
* a component is *settled* while each of its live nodes has a current regular
  configuration (its last regular ``view`` since its last reset: crash, restart, join,
  leave) and they all have one same configuration whose members are exactly the
  component's live nodes; "one same" is the same id and members, or the same members
  for protocols listed in :func:`~ringcast.lab.properties.converge_on`;
* from the last fault to the end of the run, every unsettled period (the first from the
  last fault, later ones from a relapse; one still open at the end counted so far) is
  at most ``CheckContext.convergence_bound`` (default 10) failure-detection timeouts
  of the protocol: the one the simulator writes in each node's ``stats`` row
  (``detection_timeout``, the registration's ``timeout`` at the run's settings), else
  the registration's at its default settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks._ends import node_ends
from ringcast.lab.checks.context import (
    CheckContext,
    in_protocols,
    members_key,
    small_frame,
    violation,
)
from ringcast.lab.properties import converge_on, detection_timeout

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

NAME = "convergence"
DESCRIPTION = (
    "after the last fault every live connected node is in one view of exactly its live "
    "component within the bound (failure-detection timeouts), and never unsettled "
    "longer than the bound after that"
)
FALLBACK_TIMEOUT = 1_000_000_000
"""The failure-detection timeout of a protocol with none registered here (ns)."""


def inputs(protocol: str) -> set[str]:
    return {"view"}


def detection_timeouts(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """(run, fd): each run's failure-detection timeout in ns (see the module doc)."""
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols))
    spark = ctx.trace.sparkSession
    defaults = small_frame(
        spark,
        [(p, detection_timeout(p) or FALLBACK_TIMEOUT) for p in sorted(protocols)],
        "protocol string, fd_default long",
    )
    recorded = F.when(
        F.col("kind") == "stats", F.get_json_object("detail", "$.detection_timeout")
    ).cast("long")
    return (
        rows.groupBy("run", "protocol")
        .agg(F.max(recorded).alias("fd_run"))
        .join(F.broadcast(defaults), "protocol")
        .select("run", F.coalesce("fd_run", "fd_default").alias("fd"))
    )


def components(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """Per (run, protocol, component): the live nodes, their final configurations, the
    last fault ``tf`` and the convergence time ``took`` (ns)."""
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols))
    faults = rows.filter(F.col("kind") == "fault")
    judged = ctx.judged_frame().select("run", F.col("judged_t").alias("t"))
    last_fault = (
        faults.select("run", "t").unionByName(judged).groupBy("run").agg(F.max("t").alias("tf"))
    )
    cut = (
        faults.filter(F.col("action").isin("partition", "heal"))
        .groupBy("run")
        .agg(F.max_by("detail", F.struct("t", "i")).alias("cut"))
        .select(
            "run",
            F.from_json(F.get_json_object("cut", "$.groups"), "array<array<string>>").alias(
                "groups"
            ),
        )
    )
    comp = F.coalesce(
        F.expr("array_max(transform(groups, (g, k) -> if(array_contains(g, node), k + 1, 0)))"),
        F.lit(0),
    )
    # "One same configuration": the same id and members, or for protocols converging on
    # members (their spec's converge_on) the same member set (compared as canonical strings).
    on_members = [p for p in sorted(protocols) if converge_on(p) == "members"]
    key = members_key("fin.members")
    same_config = F.when(F.col("protocol").isin(on_members), key).otherwise(
        F.concat_ws("\u0002", F.col("fin.view"), key)
    )
    nodes = (
        node_ends(ctx, protocols)
        .filter("alive")
        .join(cut, "run", "left")
        .join(last_fault, "run", "left")
        .withColumn("component", comp)
    )
    comps = nodes.groupBy("run", "protocol", "component").agg(
        F.array_sort(F.collect_list("node")).alias("live"),
        # compared as canonical strings: a set of structs holding arrays deduplicates
        # on the arrays' binary layout, which can differ for equal member lists
        F.collect_set(same_config).alias("finals"),
        F.min("fin.members").alias("members"),
        F.array_sort(F.collect_set(F.coalesce("fin.view", F.lit("none")))).alias("views"),
        F.max("fin.t").alias("tlast"),
        F.first(F.coalesce("tf", F.lit(0))).alias("tf"),
        F.array_sort(
            F.collect_list(F.concat("node", F.lit("="), F.coalesce("fin.view", F.lit("none"))))
        ).alias("by_node"),
    )
    # Every change of a live node's current configuration, in order: a regular view
    # (its configuration key; a marked one where its members are not the component's
    # live nodes) or a reset (null: no configuration).
    regular = (F.col("kind") == "view") & ~F.coalesce(F.col("transitional"), F.lit(False))
    member_of = nodes.select("run", "node", "component")
    changes = (
        rows.filter(regular | F.col("reset"))
        .join(member_of, ["run", "node"])
        .join(comps.select("run", "component", "live"), ["run", "component"])
    )
    key = F.when(F.col("protocol").isin(on_members), members_key("members")).otherwise(
        F.concat_ws("\u0002", F.col("view"), members_key("members"))
    )
    exact = F.array_sort(F.array_distinct("members")) == F.col("live")
    value = F.when(F.col("reset"), F.lit(None).cast("string")).otherwise(
        F.when(exact, key).otherwise(F.concat(F.lit("\u0003"), F.col("node")))
    )
    walks = changes.groupBy("run", "component").agg(
        F.array_sort(
            F.collect_list(
                F.struct(
                    F.col("t").cast("long").alias("t"),
                    F.col("i").cast("long").alias("i"),
                    "node",
                    value.alias("value"),
                )
            )
        ).alias("changes")
    )
    return (
        comps.join(walks, ["run", "component"], "left")
        .join(F.broadcast(ctx.run_ends()), "run")
        .join(detection_timeouts(ctx, protocols), "run")
        .withColumn("walk", _walk())
        .withColumn("took", F.greatest(F.col("tlast") - F.col("tf"), F.lit(0)))
    )


def _settled(m: Column, live: Column) -> Column:
    """Every live node has one same current configuration, of exactly the live nodes
    (a marked value, starting with U+0003, is one of other members)."""
    from pyspark.sql import functions as F

    values = F.array_distinct(F.map_values(m))
    return (
        (F.size(m) == F.size(live))
        & (F.size(values) == 1)
        & ~F.element_at(values, 1).startswith("\u0003")
    )


def _walk() -> Column:
    """The walk of :func:`ringcast.lab.liveness.settling` over a component's
    ``changes``: (first, worst, worst_from, at_end)."""
    from pyspark.sql import functions as F

    live, tf, tmax = F.col("live"), F.col("tf"), F.col("tmax")
    init = F.struct(
        F.create_map().cast("map<string,string>").alias("m"),
        F.lit(False).alias("judged"),
        F.lit(False).alias("prev"),
        F.lit(None).cast("long").alias("first"),
        tf.cast("long").alias("start"),
        F.lit(0).cast("long").alias("worst"),
        tf.cast("long").alias("wfrom"),
    )

    def step(acc: Column, e: Column) -> Column:
        entering = ~acc["judged"] & (e["t"] >= tf)
        judged = acc["judged"] | entering
        at_tf = _settled(acc["m"], live)
        prev = F.when(entering, at_tf).otherwise(acc["prev"])
        first = F.when(entering & at_tf, tf.cast("long")).otherwise(acc["first"])
        kept = F.map_filter(acc["m"], lambda k, _v: k != e["node"])
        m = F.when(e["value"].isNull(), kept).otherwise(
            F.map_concat(kept, F.create_map(e["node"], e["value"]))
        )
        now = _settled(m, live)
        leaves = judged & prev & ~now
        arrives = judged & ~prev & now
        length = e["t"] - acc["start"]
        longer = arrives & (length > acc["worst"])
        return F.struct(
            m.alias("m"),
            judged.alias("judged"),
            F.when(judged, now).otherwise(F.lit(False)).alias("prev"),
            F.when(arrives & first.isNull(), e["t"]).otherwise(first).alias("first"),
            F.when(leaves, e["t"]).otherwise(acc["start"]).alias("start"),
            F.when(longer, length).otherwise(acc["worst"]).alias("worst"),
            F.when(longer, acc["start"]).otherwise(acc["wfrom"]).alias("wfrom"),
        )

    def finish(acc: Column) -> Column:
        prev = F.when(acc["judged"], acc["prev"]).otherwise(_settled(acc["m"], live))
        first = F.when(acc["judged"], acc["first"]).otherwise(
            F.when(prev, tf.cast("long")).otherwise(F.lit(None).cast("long"))
        )
        start = F.when(acc["judged"], acc["start"]).otherwise(tf.cast("long"))
        open_len = tmax - start
        longer = ~prev & (open_len > acc["worst"])
        return F.struct(
            (first - tf).alias("first"),
            F.when(longer, open_len).otherwise(acc["worst"]).alias("worst"),
            F.when(longer, start).otherwise(acc["wfrom"]).alias("wfrom"),
            prev.alias("at_end"),
        )

    changes = F.coalesce(
        F.col("changes"),
        F.array().cast("array<struct<t:long,i:long,node:string,value:string>>"),
    )
    return F.aggregate(changes, init, step, finish)


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    comps = components(ctx, protocols)
    bound = F.col("fd") * F.lit(float(ctx.convergence_bound))
    bad = comps.filter(F.col("walk.worst") > bound)

    def ms(c: str) -> Column:
        return F.format_number(F.col(c) / 1e6, 0)

    reason = F.concat(
        F.lit("unsettled for "),
        ms("walk.worst"),
        F.lit(" ms from "),
        ms("walk.wfrom"),
        F.lit(" ms (bound "),
        F.lit(f"{ctx.convergence_bound:g}"),
        F.lit(" x "),
        ms("fd"),
        F.lit(" ms; last fault "),
        ms("tf"),
        F.lit(" ms; "),
        F.when(F.col("walk.first").isNull(), F.lit("never settled")).otherwise(
            F.concat(F.lit("first settled after "), ms("walk.first"), F.lit(" ms"))
        ),
        F.lit(")"),
    )
    note = F.concat(
        reason,
        F.lit(": live "),
        F.array_join("live", "+"),
        F.lit(", final members "),
        F.coalesce(F.array_join("members", "+"), F.lit("none")),
        F.lit(", "),
        F.array_join("by_node", " "),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("walk.wfrom"),
            F.col("live"),
            None,
            F.col("views"),
            F.array("walk.wfrom", F.col("walk.wfrom") + F.col("walk.worst")),
            note,
        )
    )
