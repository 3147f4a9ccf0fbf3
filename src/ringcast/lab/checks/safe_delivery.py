"""safe_delivery: a message delivered with order ``safe`` at a node was delivered by
every member of the configuration (regular or transitional) the node delivered it
in, unless that member crashed or left after the node installed that configuration, or
the run ended less than ``CheckContext.safe_grace`` (default 500 ms) after the
delivery (the member may have received it and not delivered it yet).

Only the members that stayed in the configuration are judged. A member that installed
it and then recorded a change of its protocol state (a ``state`` row later than its
install) without installing any configuration after it was on its way out of the
configuration when the run ended (for Totem: in Gather, Commit or Recovery after a
token loss): extended virtual synchrony has it deliver the message, or fail, when it
installs its next configuration, which the run did not reach; the trace holds no
verdict on it. A member that installed a later configuration is judged (it had to
deliver the message first), and so is one that stayed in the configuration to the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "safe_delivery"
DESCRIPTION = (
    "a safe message was delivered by every member of its configuration that did not crash"
    " and stayed in it"
)


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
    # Members on their way out when the run ended: their last install, then a state change.
    views = ctx.kind("view").filter(in_protocols(protocols)).select("run", "node", "view", "t", "i")
    by_node = Window.partitionBy("run", "node").orderBy("i")
    installs = views.withColumn("next_i", F.lead("i").over(by_node))
    last_state = (
        ctx.kind("state")
        .filter(in_protocols(protocols))
        .groupBy("run", "node")
        .agg(F.max("t").alias("last_state_t"))
    )
    leaving = (
        installs.filter(F.col("next_i").isNull())
        .join(last_state, ["run", "node"])
        .filter(F.col("last_state_t") > F.col("t"))
        .groupBy("run")
        .agg(F.collect_list(F.struct("node", "view")).alias("leaving"))
    )
    ends = F.broadcast(ctx.run_ends())
    safe = safe.join(ends, "run").filter(F.col("t") + F.lit(ctx.safe_grace) <= F.col("tmax"))
    joined = (
        safe.join(crashes, "run", "left")
        .join(leaving, "run", "left")
        .withColumn(
            "missing",
            F.expr(
                "filter(cur.members, m -> NOT array_contains(got, m) AND NOT exists("
                "coalesce(crashes, array()), c -> c.node = m AND c.t >= cur.vt) AND NOT "
                "exists(coalesce(leaving, array()), x -> x.node = m AND x.view = cur.view))"
            ),
        )
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
