"""convergence: after the last fault of a run, the nodes alive at the end install,
per connected component, one same configuration whose members are exactly that
component's live nodes, within a bound of the last fault.

* alive: the node's ``stats`` row says ``state`` = ``up``; in traces without stats
  rows (the real runtime), a node whose last crash/restart/join/leave/pause/resume
  fault is not a crash, leave or pause;
* components: the groups of the run's last ``partition`` fault (nodes in no group
  form one more component) unless a ``heal`` came after it; else one component;
* a node's final configuration is its last regular ``view`` since its last reset
  (crash, restart, join, leave); none is a violation; "one same configuration" is the
  same id and members, or the same members for protocols listed in
  :func:`~ringcast.lab.properties.converge_on` (the protocol's spec);
* the convergence time is the latest final installation minus the last fault (0 when
  every final configuration was installed before it), and must not exceed
  ``CheckContext.convergence_bound`` (default 10 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    last_fault = faults.groupBy("run").agg(F.max("t").alias("tf"))
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
    life = F.col("action").isin("crash", "restart", "join", "leave", "pause", "resume")
    stat_state = F.when(F.col("kind") == "stats", F.get_json_object("detail", "$.state"))
    final = F.when(
        ((F.col("kind") == "view") & ~F.coalesce(F.col("transitional"), F.lit(False)))
        | F.col("reset"),
        F.struct(
            F.col("reset"), F.col("view"), F.array_sort("members").alias("members"), F.col("t")
        ),
    )
    per_node = rows.groupBy("run", "protocol", "node").agg(
        F.max_by(stat_state, F.when(stat_state.isNotNull(), F.col("i"))).alias("stat"),
        F.max_by(F.col("action"), F.when(life, F.col("i"))).alias("last_life"),
        F.max_by(final, F.when(final.isNotNull(), F.col("i"))).alias("fin"),
    )
    has_stats = per_node.groupBy("run").agg(
        F.max(F.col("stat").isNotNull().cast("int")).alias("has_stats")
    )
    alive = F.when(
        F.col("has_stats") == 1, F.coalesce(F.col("stat") == "up", F.lit(False))
    ).otherwise(~F.coalesce(F.col("last_life").isin("crash", "leave", "pause"), F.lit(False)))
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
        per_node.join(has_stats, "run")
        .join(cut, "run", "left")
        .join(last_fault, "run", "left")
        .filter(alive)
        .withColumns({"component": comp, "fin": F.when(~F.col("fin.reset"), F.col("fin"))})
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
