"""A certificate for total_order, fifo and integrity: one cheap pass that proves the
three properties for the runs where every node delivers along one common order, so
that only the other runs go through the exact checks.

The pass ranks each node's deliveries in event order ``i`` (one window, partitioned
by run and node) and groups the deliveries by (run, message). A run is certified when:

1. **one rank per message**: every delivery of a message, at every node, has the same
   rank. Then any two nodes deliver the messages they share at equal ranks, so in the
   same relative order (total_order, both over every delivery and over any subset of
   the orders); and no node delivers a message twice, since a node's ranks are
   distinct (integrity's first half);
2. **every delivered message has a submit row** in its run (integrity's second half);
3. **senders' counters follow the ranks**: per sender (parsed from ``sender:counter``
   as :mod:`~ringcast.lab.checks.fifo` does), a smaller counter always has a smaller
   rank. Every node delivers in rank order, so in counter order per sender (fifo).

Each condition is sufficient, not necessary: a run that fails one (a node that missed
a message, joined late or delivered a duplicate) is not in violation for that; the
exact checks decide it and give the counterexamples. The certificate covers protocols
whose total order is scoped to the run (:data:`~ringcast.lab.properties.ORDER_SCOPE`);
runs of view-scoped protocols (Totem) always take the exact path. Everything is
built-in Spark SQL: one window, hash aggregations, one small window per sender.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ringcast.lab.checks.context import msg_counter, msg_sender
from ringcast.lab.properties import ORDER_SCOPE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CERTIFIED = ("total_order", "fifo", "integrity")
"""The properties a certificate proves."""


def certifiable(protocol: str) -> bool:
    """Whether runs of ``protocol`` can be certified (total order scoped to the run)."""
    return ORDER_SCOPE.get(protocol, "run") == "run"


def failed_runs(trace: DataFrame, protocols: Iterable[str]) -> DataFrame:
    """The runs of ``protocols`` whose deliveries fail the certificate (column ``run``).

    ``trace`` has the trace columns plus ``protocol``. Runs of ``protocols`` that are not
    returned are certified for :data:`CERTIFIED`.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kind = F.col("kind")
    rows = trace.filter(
        F.col("protocol").isin(*sorted(protocols)) & kind.isin("deliver", "submit")
    ).select("run", "node", "i", "msg", (kind == "deliver").alias("delivered"))
    # submits rank among themselves (their rank is never read): one window, no union.
    # A hash of the partition key leads it so that the sort mostly compares one long.
    group = F.xxhash64("run", "node", "delivered")
    rank = F.row_number().over(Window.partitionBy("_g", "run", "node", "delivered").orderBy("i"))
    # one shuffle, by run: every later window and aggregation is keyed by run and more
    ranked = rows.repartition("run").withColumn("_g", group).withColumn("rank", rank)
    delivered = F.col("delivered")
    per_msg = ranked.groupBy("run", "msg").agg(
        F.min(F.when(delivered, F.col("rank"))).alias("lo"),
        F.max(F.when(delivered, F.col("rank"))).alias("hi"),
        F.max((~delivered).cast("int")).alias("sent"),
    )
    # condition 1 and 2 per message, condition 3 per (run, sender, counter): the rank
    # range of the counter must lie wholly above the previous counter's (equal counters
    # of distinct messages: fifo ignores their mutual order, so they share one range).
    # One chain, no branch: Spark would compute a shared input once per branch.
    bad = (F.col("lo") != F.col("hi")) | (F.col("sent") == 0)
    sender, counter = msg_sender(), msg_counter()
    per_counter = (
        per_msg.filter(F.col("lo").isNotNull())
        .groupBy("run", sender.alias("sender"), counter.alias("counter"))
        .agg(
            F.min("lo").alias("lo"),
            F.max("lo").alias("hi"),
            F.max(bad.cast("int")).alias("bad"),
        )
    )
    w = Window.partitionBy("run", "sender").orderBy("counter")
    return (
        per_counter.withColumn("prev_hi", F.lag("hi").over(w))
        .withColumn("prev_counter", F.lag("counter").over(w))
        .filter(
            (F.col("bad") == 1)
            | (
                F.col("counter").isNotNull()
                & F.col("prev_counter").isNotNull()
                & (F.col("prev_hi") >= F.col("lo"))
            )
        )
        .select("run")
        .distinct()
    )
