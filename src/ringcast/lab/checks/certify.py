"""A certificate for total_order, fifo and integrity: one cheap pass that proves the
three properties for the runs where every node delivers along one common order, so
that only the other runs go through the exact checks.

The pass gives each delivery a **label**: its position in its node's deliveries, in
event order ``i``. Deliveries and submits are then grouped by (run, message). A run is
certified when:

1. **one label per message**: every delivery of a message, at every node, has the same
   label. A node's labels strictly increase along its event order, so any two nodes
   deliver the messages they share in the same relative order (total_order, over
   every delivery and so over any subset of the orders); and no node delivers a
   message twice, since its labels are distinct (integrity's first half);
2. **every delivered message has a submit row** in its run (integrity's second half);
3. **senders' counters follow the labels**: per sender (parsed from ``sender:counter``
   as :mod:`~ringcast.lab.checks.fifo` does), a smaller counter always has a smaller
   label. Every node delivers in label order, so in counter order per sender (fifo).

Each condition is sufficient, not necessary: a run that fails one (a node that missed
a message, joined late or delivered a duplicate) is not in violation for that; the
exact checks decide it and give the counterexamples. Soundness needs only that a
node's labels strictly increase along its event order; that they count from 0 (so
that nodes delivering one common order agree) matters for how many runs pass.

**How labels are computed.** The label is ``row_number()`` over a window partitioned
by (run, node) and ordered by ``i``: what Spark promises of ``row_number`` (consecutive
numbers in the window's order) is all that soundness rests on. The run is a number
``rid`` given by the driver (one broadcast join on the run's name, exact), the node a
long, Spark's ``xxhash64(run, node)``, so that the window sorts on three longs instead
of two strings and a long. Two nodes of a run whose hashes collide share one window:
their deliveries are numbered together, each node's labels still strictly increase
along its own events (sound), they just do not count from 0 (that run fails). Submits
are numbered in windows of their own (no node hash), so they do not shift a delivery's
label. The rows are shuffled once, by ``rid``; the window, the per-message aggregation
and the per-sender maximum all read that partitioning. Deliveries and submits are told
apart by their kind's full name: a protocol's own kind (``elected``, ``coord``, ...) is
never taken for either.

The certificate covers every protocol. Condition 1 gives one order over all of a run's
deliveries, whatever their delivery order or configuration, so it also proves total
order where it is scoped to a configuration
(:func:`~ringcast.lab.properties.order_scope`, Totem): the deliveries made in one
configuration are a subset. fifo and integrity are scoped to the run for every
protocol. Everything is built-in Spark SQL: one shuffle, one sort and ``row_number`` per
(run, node), one hash aggregation per message, one running maximum per sender (a
window over the messages, not the deliveries). The exact checks (``run_checks(...,
certify=False)``) are the plain reference the certificate is tested against.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ringcast.lab.checks.context import NodeInfo, msg_counter, msg_sender, small_frame

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

CERTIFIED = ("total_order", "fifo", "integrity")
"""The properties a certificate proves."""

DELIVER, SUBMIT = "deliver", "submit"
"""The kinds the certificate reads, compared by their full names."""
ROWS_PER_PARTITION = 200_000
"""Deliveries per partition at most. Up to Spark 4.2 the per-message aggregation of one
partition then fit the small first-level hash map Spark generates (2**16 keys) instead
of spilling over into the general one, about twice as slow; Spark 4.3 runs an
aggregation with no shuffle below it in one step, on the general map only."""


@dataclass(frozen=True)
class Layout:
    """The runs a certificate reads: ``runs[rid]`` is the run numbered ``rid``;
    ``excluded`` runs fail it up front (rows of no node); ``partitions`` is the number
    of shuffle partitions."""

    runs: list[str]
    excluded: frozenset[str]
    partitions: int


def plan_layout(nodes: Iterable[NodeInfo], partitions: int) -> Layout:
    """Number the runs of ``nodes`` (``rid``, in name order) and choose the partitions
    (at least ``partitions``, at most :data:`ROWS_PER_PARTITION` deliveries each). A run
    with rows of no node is excluded (it cannot be labelled per node: it takes the
    exact path); rows of no run are left out."""
    nodes = [n for n in nodes if n.run is not None]
    unnamed = {n.run for n in nodes if n.node is None}
    deliveries = sum(n.deliveries for n in nodes)
    partitions = max(partitions, -(-deliveries // ROWS_PER_PARTITION))
    runs = sorted({n.run for n in nodes} - unnamed)
    return Layout(runs, frozenset(unnamed), partitions)


@dataclass(frozen=True)
class Certificate:
    """A certificate planned over a trace (:func:`certificate`): ``frame`` lists the
    numbers (``rid``) of the laid-out runs that fail, None when none is laid out."""

    frame: DataFrame | None
    layout: Layout

    def failed_runs(self) -> set[str]:
        """Run the certificate (one Spark job): the runs of the layout that fail it or
        that it could not lay out; every other run of the layout is certified for
        :data:`CERTIFIED`."""
        if self.frame is None:
            return set(self.layout.excluded)
        runs = self.layout.runs
        return {runs[r.rid] for r in self.frame.collect()} | set(self.layout.excluded)


def failed_runs(trace: DataFrame, layout: Layout) -> set[str]:
    """The runs of ``layout`` whose deliveries fail the certificate (or that it could
    not lay out). ``trace`` has the trace columns; every other run of ``layout`` is
    certified for :data:`CERTIFIED`."""
    return certificate(trace, layout).failed_runs()


def node_key() -> Column:
    """A delivery's (run, node) as one long: Spark's ``xxhash64(run, node)``. Nodes of a
    run with one key share a window (their run fails); nothing else depends on it."""
    from pyspark.sql import functions as F

    return F.xxhash64("run", "node")


def certificate(trace: DataFrame, layout: Layout) -> Certificate:
    """Plan the certificate of the runs of ``layout`` over ``trace`` (no Spark job yet:
    :meth:`Certificate.failed_runs` runs it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not layout.runs:
        return Certificate(None, layout)
    spark = trace.sparkSession
    numbered = [(run, rid) for rid, run in enumerate(layout.runs)]
    runs = small_frame(spark, numbered, "run string, rid long")
    kind = F.col("kind")
    delivered = kind == DELIVER
    # a delivery's node as one long; a submit none, so that submits are numbered in
    # windows of their own and do not shift the deliveries' labels
    node = F.when(delivered, node_key())
    per_node = Window.partitionBy("rid", "node").orderBy("i")
    labelled = (
        trace.filter(kind.isin(DELIVER, SUBMIT))
        .join(F.broadcast(runs), "run")  # exact, and keeps just the layout's runs
        .select("rid", node.alias("node"), "i", "msg", delivered.alias("delivered"))
        .repartition(layout.partitions, "rid")
        .select("rid", "msg", "delivered", (F.row_number().over(per_node) - 1).alias("label"))
    )
    delivered = F.col("delivered")
    per_msg = labelled.groupBy("rid", "msg").agg(
        F.min(F.when(delivered, F.col("label"))).alias("lo"),
        F.max(F.when(delivered, F.col("label"))).alias("hi"),
        F.max((~delivered).cast("int")).alias("sent"),
    )
    # condition 1 and 2 per message; condition 3 per message too: the largest label of
    # the sender's messages with smaller counters (a running maximum over a range
    # frame, so equal counters, whose mutual order fifo ignores, are not compared)
    # must lie below the message's. One chain, no branch: Spark would compute a shared
    # input once per branch.
    bad = (F.col("lo") != F.col("hi")) | (F.col("sent") == 0)
    earlier = (
        Window.partitionBy("rid", "sender")
        .orderBy("counter")
        .rangeBetween(Window.unboundedPreceding, -1)
    )
    failed = (
        per_msg.filter(F.col("lo").isNotNull())
        .select(
            "rid",
            "lo",
            bad.alias("bad"),
            msg_sender().alias("sender"),
            msg_counter().alias("counter"),
        )
        .withColumn("below", F.max(F.when(F.col("counter").isNotNull(), F.col("lo"))).over(earlier))
        .filter(F.col("bad") | (F.col("counter").isNotNull() & (F.col("below") >= F.col("lo"))))
        .select("rid")
        .distinct()
    )
    return Certificate(failed, layout)
