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

from ringcast.lab.checks.context import CheckContext, in_protocols, members_key, violation

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
    """The safe deliveries that some member of their configuration never delivered.

    Linear in the deliveries (up to the sorts of the shuffles), whatever the group
    size and the crashes: no delivery row carries a member list. A configuration's
    member list is expanded once per (message, member list) delivered in it, those
    members that delivered the message (or were leaving it) are removed, and of the
    rest (the candidates) only the latest crash or leave of each is kept: a delivery
    made after installing the configuration at ``vt`` is violated exactly when some
    candidate never crashed or left at ``vt`` or later, i.e. when the earliest such
    latest time is before ``vt``. The candidates are joined back to the deliveries
    only for the deliveries so violated."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    safe = ctx.deliveries.filter(in_protocols(protocols) & (F.col("order") == "safe"))
    got = safe.select("run", "msg", F.col("node").alias("m"))
    # each distinct (view, member list) of a run, numbered: the deliveries carry the number
    views = ctx.kind("view").filter(in_protocols(protocols))
    lists = views.filter(F.col("members").isNotNull()).select(
        "run", "node", F.col("i").alias("vi"), "view", "members", members_key("members").alias("mk")
    )
    keys = (
        lists.select("run", "view", "mk")
        .distinct()
        .withColumn("gid", F.dense_rank().over(Window.partitionBy("run").orderBy("view", "mk")))
    )
    lists = lists.join(keys, ["run", "view", "mk"])
    installs = lists.select("run", "node", "vi", "gid")
    members = lists.dropDuplicates(["run", "gid"]).select(
        "run", "gid", "view", F.explode("members").alias("m")
    )
    ends = F.broadcast(ctx.run_ends())
    judged = (
        safe.filter(F.col("cur").isNotNull())
        .join(ends, "run")
        .filter(F.col("t") + F.lit(ctx.safe_grace) <= F.col("tmax"))
        .select("run", "protocol", "node", "i", "t", "msg", "cur", F.col("cur.vi").alias("vi"))
        .join(installs, ["run", "node", "vi"])
    )
    # Members on their way out when the run ended: their last install, then a state change.
    by_node = Window.partitionBy("run", "node").orderBy("i")
    last_state = (
        ctx.kind("state")
        .filter(in_protocols(protocols))
        .groupBy("run", "node")
        .agg(F.max("t").alias("last_state_t"))
    )
    leaving = (
        views.select("run", "node", "view", "t", F.lead("i").over(by_node).alias("next_i"))
        .filter(F.col("next_i").isNull())
        .join(last_state, ["run", "node"])
        .filter(F.col("last_state_t") > F.col("t"))
        .select("run", F.col("node").alias("m"), "view")
    )
    gone = (
        ctx.kind("fault")
        .filter(in_protocols(protocols) & F.col("action").isin("crash", "leave"))
        .groupBy("run", F.col("node").alias("m"))
        .agg(F.max("t").alias("gone_t"))
    )
    candidates = (
        judged.select("run", "msg", "gid")
        .distinct()
        .join(members, ["run", "gid"])
        .join(got, ["run", "msg", "m"], "left_anti")
        .join(leaving, ["run", "m", "view"], "left_anti")
        .join(gone, ["run", "m"], "left")
        .select("run", "msg", "gid", "m", F.coalesce("gone_t", F.lit(-(2**63))).alias("gone_t"))
    )
    earliest = candidates.groupBy("run", "msg", "gid").agg(F.min("gone_t").alias("earliest"))
    flagged = judged.join(earliest, ["run", "msg", "gid"]).filter(
        F.col("earliest") < F.col("cur.vt")
    )
    bad = (
        flagged.join(candidates, ["run", "msg", "gid"])
        .filter(F.col("gone_t") < F.col("cur.vt"))
        .groupBy("run", "protocol", "node", "i", "t", "msg", "cur")
        .agg(F.array_sort(F.collect_list("m")).alias("missing"))
    )
    note = F.concat(
        F.lit("safe message delivered at "),
        F.col("node"),
        F.lit(" in configuration "),
        F.coalesce(F.col("cur.view"), F.lit("?")),
        F.lit(" but never by "),
        F.array_join("missing", ","),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.concat(F.array("node"), F.col("missing")),
            F.array("msg"),
            F.array(F.col("cur.view")),
            F.array("cur.vt", "t"),
            note,
        )
    )
