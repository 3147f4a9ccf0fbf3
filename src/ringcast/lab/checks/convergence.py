"""convergence: after the last fault of a run, the nodes alive at the end install,
per connected component, one same configuration whose members are exactly that
component's live nodes, within a bound of the last fault.

* alive: as :func:`~ringcast.lab.checks._ends.node_ends` says (its ``stats`` row, or
  its last crash/restart/join/leave/pause/resume fault, or a real cluster's node
  judged crashed where its trace ends, which counts as a fault there);
* components: the groups of the run's last ``partition`` fault (nodes in no group
  form one more component) unless a ``heal`` came after it; else one component;
* a node's final configuration is its last regular ``view`` since its last reset
  (crash, restart, join, leave; ``node_ends``' ``fin``); none is a violation; "one
  same configuration" is the same id and members, or the same members for protocols listed in
  :func:`~ringcast.lab.properties.converge_on` (the protocol's spec);
* the convergence time is the latest final installation minus the last fault (0 when
  every final configuration was installed before it), and must not exceed
  ``CheckContext.convergence_bound`` (default 10 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks._ends import node_ends
from ringcast.lab.checks.context import CheckContext, in_protocols, members_key, violation
from ringcast.lab.properties import converge_on

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "convergence"
DESCRIPTION = (
    "after the last fault every live connected node installs one same view of exactly "
    "the live component, within the bound"
)


def inputs(protocol: str) -> set[str]:
    return {"view"}


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
    return (
        nodes.groupBy("run", "protocol", "component")
        .agg(
            F.array_sort(F.collect_list("node")).alias("live"),
            # compared as canonical strings: a set of structs holding arrays deduplicates
            # on the arrays' binary layout, which can differ for equal member lists
            F.collect_set(same_config).alias("finals"),
            F.min("fin.members").alias("members"),
            F.array_sort(F.collect_set(F.coalesce("fin.view", F.lit("none")))).alias("views"),
            F.sum(F.col("fin").isNull().cast("int")).alias("no_view"),
            F.max("fin.t").alias("tlast"),
            F.first(F.coalesce("tf", F.lit(0))).alias("tf"),
            F.array_sort(
                F.collect_list(F.concat("node", F.lit("="), F.coalesce("fin.view", F.lit("none"))))
            ).alias("by_node"),
        )
        .withColumn("took", F.greatest(F.col("tlast") - F.col("tf"), F.lit(0)))
    )


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    comps = components(ctx, protocols)
    split = F.size("finals") > 1
    wrong = F.col("members") != F.col("live")
    late = F.col("took") > F.lit(ctx.convergence_bound)
    bad = comps.filter((F.col("no_view") > 0) | split | wrong | late)
    reason = (
        F.when(F.col("no_view") > 0, F.lit("a live node has no configuration"))
        .when(split, F.lit("live nodes end in different configurations"))
        .when(
            wrong,
            F.concat(
                F.lit("final configuration has members "),
                F.array_join(F.col("members"), "+"),
                F.lit(", live nodes are "),
                F.array_join("live", "+"),
            ),
        )
        .otherwise(
            F.concat(
                F.lit("converged only "),
                (F.col("took") / 1e6).cast("string"),
                F.lit(" ms after the last fault"),
            )
        )
    )
    note = F.concat(reason, F.lit(": "), F.array_join("by_node", " "))
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.coalesce("tlast", "tf"),
            F.col("live"),
            None,
            F.col("views"),
            F.array("tf", F.coalesce("tlast", "tf")),
            note,
        )
    )
