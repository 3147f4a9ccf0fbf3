"""How each node of a run ends: alive or not, its final configuration, its last
life event. Shared by the liveness properties (convergence, delivery_progress).

* alive: the node's ``stats`` row says ``state`` = ``up``; in traces without stats
  rows (the real runtime), a node whose last crash/restart/join/leave/pause/resume
  fault is not a crash, leave or pause, and that is not judged crashed where its trace
  ends (:func:`~ringcast.lab.checks.context.judged_crashes`: a real cluster's node
  killed before the cluster was stopped);
* ``fin``: its last regular ``view`` since its last reset (crash, restart, join,
  leave) as (view, members sorted, t), null when it has none;
* ``life_t`` / ``reset_i``: the time of its last life fault (any of the six, or the
  judged crash) and the event index of its last reset (-1: none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LIFE_ACTIONS = ("crash", "restart", "join", "leave", "pause", "resume")
DOWN_ACTIONS = ("crash", "leave", "pause")


def node_ends(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """Per (run, protocol, node): ``alive``, ``fin``, ``life_t``, ``reset_i``."""
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols))
    life = F.col("action").isin(*LIFE_ACTIONS)
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
        F.max(F.when(life, F.col("t"))).alias("life_t"),
        F.coalesce(F.max(F.when(F.col("reset"), F.col("i"))), F.lit(-1)).alias("reset_i"),
        F.max_by(final, F.when(final.isNotNull(), F.col("i"))).alias("fin"),
    )
    has_stats = per_node.groupBy("run").agg(
        F.max(F.col("stat").isNotNull().cast("int")).alias("has_stats")
    )
    alive = F.when(
        F.col("has_stats") == 1, F.coalesce(F.col("stat") == "up", F.lit(False))
    ).otherwise(~F.coalesce(F.col("last_life").isin(*DOWN_ACTIONS), F.lit(False)))
    judged = F.broadcast(ctx.judged_frame())
    return (
        per_node.join(has_stats, "run")
        .join(judged, ["run", "node"], "left")
        .select(
            "run",
            "protocol",
            "node",
            (alive & F.col("judged_t").isNull()).alias("alive"),
            F.when(~F.col("fin.reset"), F.col("fin")).alias("fin"),
            F.greatest("life_t", "judged_t").alias("life_t"),
            "reset_i",
        )
    )
