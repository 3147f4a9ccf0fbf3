"""delivery_progress: a live node whose own messages wait keeps delivering.

Liveness for multicast, the counterpart of convergence: safety alone is met by a
ring that stops delivering (a lost retransmission request that stalls one ring keeps
every order and view intact). Judged per node alive at the end of the run
(:func:`~ringcast.lab.checks._ends.node_ends`):

* its *pending* messages are those it submitted since its last reset (crash, restart,
  join, leave) and has not delivered since;
* with none pending it is not judged (an idle node owes nothing);
* otherwise the run's end may lie at most ``CheckContext.progress_bound`` (default
  1 s) after the latest of: its last delivery, its first pending submit, the run's
  last fault, its last life fault (a resume, say) and the install of its final
  configuration.

A saturated node keeps delivering to the end of the run, however long its queue, and
is never judged late; a node whose configuration is still churning when the run ends
is convergence's business, since each new configuration restarts its clock.

It reads the trace's submits and deliveries itself (not through the annotated
context's deliveries), so it runs in the first round, beside the certificate, and a
sweep whose runs the certificate proves still needs no second round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks._ends import node_ends
from ringcast.lab.checks.context import CheckContext, in_protocols, msg_sender, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "delivery_progress"
DESCRIPTION = (
    "a live node with messages of its own not yet delivered goes no longer than the "
    "bound without a delivery"
)
SHOWN = 3
"""Pending messages named in a counterexample."""


def inputs(protocol: str) -> set[str]:
    return {"submit"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols))
    ends = node_ends(ctx, protocols).filter("alive").drop("alive")
    last_fault = rows.filter(F.col("kind") == "fault").groupBy("run").agg(F.max("t").alias("tf"))
    # Submits and deliveries straight from the trace, five columns of them: the
    # annotated context of the first round holds no deliveries (the certificate proves
    # most runs without them), and this property needs no annotation of theirs.
    since = F.broadcast(ends.select("run", "node", "reset_i"))
    messages = (
        ctx.of_runs(
            ctx.trace.filter(in_protocols(protocols) & F.col("kind").isin("submit", "deliver"))
        )
        .select("run", "node", "kind", "msg", "t", "i")
        .join(since, ["run", "node"])
        .filter(F.col("i") > F.col("reset_i"))
    )
    is_submit = F.col("kind") == "submit"
    is_deliver = F.col("kind") == "deliver"
    # First per node, by counting (no shuffle of the deliveries): the nodes that may
    # have a message of their own pending, fewer submits than deliveries of their own
    # messages (a ``sender:counter`` id naming the node). Only theirs are matched
    # message by message. (A node that delivered one of its own messages twice, an
    # integrity violation, can hide a pending one here.)
    counts = messages.groupBy("run", "node").agg(
        F.sum(is_submit.cast("int")).alias("submitted"),
        F.sum((is_deliver & (msg_sender() == F.col("node"))).cast("int")).alias("own"),
        F.max(F.when(is_deliver, F.col("t"))).alias("last_delivery"),
    )
    suspects = counts.filter(F.col("submitted") > F.col("own"))
    mine = messages.join(F.broadcast(suspects.select("run", "node")), ["run", "node"])
    submits = mine.filter(is_submit)
    delivered = mine.filter(is_deliver)
    pending = (
        submits.join(delivered.select("run", "node", "msg"), ["run", "node", "msg"], "left_anti")
        .groupBy("run", "node")
        .agg(
            F.count("*").alias("pending"),
            F.min("t").alias("first_pending"),
            F.slice(F.array_sort(F.collect_list(F.struct("t", "msg"))), 1, SHOWN).alias("shown"),
        )
    )
    judged = (
        pending.join(ends, ["run", "node"])
        .join(suspects.select("run", "node", "last_delivery"), ["run", "node"])
        .join(last_fault, "run", "left")
        .join(F.broadcast(ctx.run_ends()), "run")
    )
    stall_from = F.greatest(
        F.coalesce("last_delivery", F.lit(0)),
        F.col("first_pending"),
        F.coalesce("tf", F.lit(0)),
        F.coalesce("life_t", F.lit(0)),
        F.coalesce("fin.t", F.lit(0)),
    )
    judged = judged.withColumn("stall_from", stall_from)
    bad = judged.filter(F.col("tmax") - F.col("stall_from") > F.lit(ctx.progress_bound))
    note = F.concat(
        F.col("node"),
        F.lit(" has "),
        F.col("pending").cast("string"),
        F.lit(" message(s) of its own undelivered and delivered nothing in the last "),
        ((F.col("tmax") - F.col("stall_from")) / 1e6).cast("string"),
        F.lit(" ms of the run (last delivery at "),
        F.coalesce((F.col("last_delivery") / 1e6).cast("string"), F.lit("never")),
        F.lit(" ms)"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("stall_from"),
            F.array("node"),
            F.transform("shown", lambda s: s["msg"]),
            F.array(F.col("fin.view")),
            F.array("stall_from", "tmax"),
            note,
        )
    )
