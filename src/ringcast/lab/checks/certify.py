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

**How labels are computed without a window.** A window over (run, node) ordered by
``i`` makes Spark sort on several keys, comparing whole rows. Instead, each (run, node)
gets a ``slot``: the row index its first delivery will have in the shuffle partition
its run hashes to (the deliveries of the (run, node)s laid out before it there), and
each delivery the sort key ``slot << 36 | i``: one long, which Spark sorts with a
radix sort. After one shuffle by run and that sort, a (run, node)'s deliveries lie
contiguous and in event order from row ``slot`` on, so the row's index in its
partition (the low bits of ``monotonically_increasing_id()``) minus the key's high
bits is the label: nothing but the key has to cross the shuffle for it. The layout is
planned on the driver from :attr:`~ringcast.lab.checks.context.CheckContext.run_nodes`;
a run it cannot lay out (``i`` outside ``[0, 2**36)``, or deliveries beyond the slots'
bits) fails up front.

**How a row finds its slot.** Each delivery looks its (run, node) up in the broadcast
layout by one long, Spark's ``xxhash64(run, node)``, instead of by the two strings: a
lookup in a table of longs, not an equality test of two strings per row. The same hash
is computed on the driver (:func:`xxhash64`) for every (run, node) of the trace, and a
run with a (run, node) whose hash another (run, node) shares fails up front, so the
lookup is exact: a row can only find its own (run, node).

The certificate covers every protocol. Condition 1 gives one order over all of a run's
deliveries, whatever their delivery order or configuration, so it also proves total
order where it is scoped to a configuration
(:func:`~ringcast.lab.properties.order_scope`, Totem): the deliveries made in one
configuration are a subset. fifo and integrity are scoped to the run for every
protocol. Everything is built-in Spark SQL: one shuffle, one sort on one long, one hash
aggregation per message, one running maximum per sender (a window over the messages,
not the deliveries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ringcast.lab.checks.context import NodeInfo, msg_counter, msg_sender, small_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CERTIFIED = ("total_order", "fifo", "integrity")
"""The properties a certificate proves."""

I_BITS = 36
"""The sort key's low bits hold ``i``: a run whose ``i`` leaves ``[0, 2**36)`` fails."""
SLOT_BITS = 63 - I_BITS
"""The sort key's high bits hold the (run, node)'s slot: a row index in its partition."""
ROW_BITS = 33
"""``monotonically_increasing_id()`` is the partition index ``<< 33`` plus the row."""
DELIVERY_LENGTH = len("deliver")
"""The certificate takes every row whose kind has this length for a delivery, without
comparing bytes (a few per cent of its task time, ``docs/benchmarks.md``). Of
:data:`~ringcast.lab.checks.context.KINDS` only ``deliver`` has it; a row of another
kind so taken can only fail its run, never certify one: the labels of a node still
strictly increase along its event order, and the three conditions over more deliveries
imply them over fewer. Submits are matched by name: a row taken for a submit that is
none could certify a run (condition 2)."""
LAST = (1 << 63) - 1
"""The sort key of submits: after every delivery, so they do not shift the labels."""
ROWS_PER_PARTITION = 200_000
"""Deliveries per partition at most. Up to Spark 4.2 the per-message aggregation of one
partition then fit the small first-level hash map Spark generates (2**16 keys) instead
of spilling over into the general one, about twice as slow; Spark 4.3 runs an
aggregation with no shuffle below it in one step, on the general map only."""


@dataclass(frozen=True)
class Layout:
    """Where each (run, node)'s deliveries land: ``groups`` rows are (run, node, rid,
    slot, pair), ``pair`` the (run, node)'s :func:`xxhash64`; ``excluded`` runs cannot
    be laid out and fail the certificate."""

    groups: list[tuple[str, str, int, int, int]]
    excluded: frozenset[str]
    partitions: int


def plan_layout(nodes: Iterable[NodeInfo], partitions: int) -> Layout:
    """Number the runs (``rid``), choose the partitions (at least ``partitions``, at
    most :data:`ROWS_PER_PARTITION` deliveries each), find the partition each run
    hashes to (:func:`hash_partition`, the hash ``repartition`` uses) and, per partition,
    give its (run, node)s, in (rid, node) order, as slot the row index its first
    delivery will have there: the deliveries of the (run, node)s before it. Runs with a
    (run, node) whose :func:`xxhash64` is not its own, or with rows of no node, are
    excluded; rows of no run are left out."""
    nodes = list(nodes)
    # rows without a run or a node cannot be labelled: their runs take the exact path
    unnamed = {n.run for n in nodes if n.node is None and n.run is not None}
    nodes = [n for n in nodes if n.run is not None and n.run not in unnamed]
    pair = {(n.run, n.node): xxhash64(n.run, n.node) for n in nodes}
    deliveries = sum(n.deliveries for n in nodes)
    partitions = max(partitions, -(-deliveries // ROWS_PER_PARTITION))
    per_run: dict[str, list[NodeInfo]] = {}
    for n in nodes:
        per_run.setdefault(n.run, []).append(n)
    excluded = {
        run for run, ns in per_run.items() if any(n.imin < 0 or n.imax >= 1 << I_BITS for n in ns)
    }
    excluded |= _colliding(pair) | unnamed
    runs = sorted(set(per_run) - excluded)
    if not runs:
        return Layout([], frozenset(excluded), partitions)
    by_partition: dict[int, list[int]] = {}
    for rid in range(len(runs)):
        by_partition.setdefault(hash_partition(rid, partitions), []).append(rid)
    groups: list[tuple[str, str, int, int, int]] = []
    for members in by_partition.values():
        offset = 0
        for rid in members:
            run = runs[rid]
            ns = sorted(per_run[run], key=lambda n: n.node)
            if offset + sum(n.deliveries for n in ns) >= 1 << SLOT_BITS:  # rare
                excluded.add(run)
                continue
            for n in ns:
                groups.append((run, n.node, rid, offset, pair[(run, n.node)]))
                offset += n.deliveries
    return Layout(groups, frozenset(excluded), partitions)


def _colliding(pair: dict[tuple[str, str], int]) -> set[str]:
    """The runs with a (run, node) whose hash in ``pair`` another (run, node) has."""
    seen: dict[int, list[str]] = {}
    for (run, _node), h in pair.items():
        seen.setdefault(h, []).append(run)
    return {run for runs in seen.values() if len(runs) > 1 for run in runs}


_M64 = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round64(acc: int, lane: int) -> int:
    return _rotl64((acc + lane * _P2) & _M64, 31) * _P1 & _M64


def _xxh64(data: bytes, seed: int) -> int:
    """XXH64 of ``data`` (the reference algorithm, which Spark implements), unsigned."""
    n, pos = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        while pos <= n - 32:
            for k in range(4):
                v[k] = _round64(v[k], int.from_bytes(data[pos : pos + 8], "little"))
                pos += 8
        h = (_rotl64(v[0], 1) + _rotl64(v[1], 7) + _rotl64(v[2], 12) + _rotl64(v[3], 18)) & _M64
        for k in range(4):
            h = ((h ^ _round64(0, v[k])) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while pos + 8 <= n:
        h ^= _round64(0, int.from_bytes(data[pos : pos + 8], "little"))
        h = (_rotl64(h, 27) * _P1 + _P4) & _M64
        pos += 8
    if pos + 4 <= n:
        h ^= int.from_bytes(data[pos : pos + 4], "little") * _P1 & _M64
        h = (_rotl64(h, 23) * _P2 + _P3) & _M64
        pos += 4
    while pos < n:
        h ^= data[pos] * _P5 & _M64
        h = _rotl64(h, 11) * _P1 & _M64
        pos += 1
    h ^= h >> 33
    h = h * _P2 & _M64
    h ^= h >> 29
    h = h * _P3 & _M64
    return h ^ (h >> 32)


def xxhash64(*values: str) -> int:
    """Spark's ``xxhash64`` of string columns, as the signed long Spark gives: XXH64 of
    each value's UTF-8 bytes in turn, seeded with 42 and then with the hash so far."""
    h = 42
    for v in values:
        h = _xxh64(v.encode(), h)
    return h - (1 << 64) if h >= 1 << 63 else h


_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    return _rotl32(k1 * 0xCC9E2D51 & _M32, 15) * 0x1B873593 & _M32


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl32(h1 ^ k1, 13) * 5 + 0xE6546B64) & _M32


def hash_partition(value: int, partitions: int) -> int:
    """The partition ``repartition(partitions, col)`` puts a long ``value`` in: Spark's
    ``pmod(hash(col), partitions)``, Murmur3 (x86, 32 bits, seed 42) of the long's low
    then high word. Computed here so that planning the layout needs no Spark job. A
    mismatch would only cost completeness (runs failing the certificate), never
    soundness: a node's labels increase along its deliveries wherever they land."""
    h1 = _mix_h1(42, _mix_k1(value & _M32))
    h1 = _mix_h1(h1, _mix_k1((value >> 32) & _M32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    signed = h1 - (1 << 32) if h1 >= 1 << 31 else h1
    return signed % partitions


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
        runs = {rid: run for run, _node, rid, _slot, _pair in self.layout.groups}
        return {runs[r.rid] for r in self.frame.collect()} | set(self.layout.excluded)


def failed_runs(trace: DataFrame, layout: Layout) -> set[str]:
    """The runs of ``layout`` whose deliveries fail the certificate (or that it could
    not lay out). ``trace`` has the trace columns; every other run of ``layout`` is
    certified for :data:`CERTIFIED`."""
    return certificate(trace, layout).failed_runs()


def certificate(trace: DataFrame, layout: Layout) -> Certificate:
    """Plan the certificate of the runs of ``layout`` over ``trace`` (no Spark job yet:
    :meth:`Certificate.failed_runs` runs it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not layout.groups:
        return Certificate(None, layout)
    spark = trace.sparkSession
    groups = small_frame(
        spark,
        [(pair, rid, slot) for _run, _node, rid, slot, pair in layout.groups],
        "pair long, rid long, slot long",
    )
    kind = F.col("kind")
    # by length, comparing no bytes (DELIVERY_LENGTH: why that is sound); submits by name
    delivery = F.octet_length(kind) == DELIVERY_LENGTH
    delivered = F.col("delivered")
    key = F.when(delivered, F.shiftleft("slot", I_BITS).bitwiseOR(F.col("i"))).otherwise(
        F.lit(LAST)
    )
    in_partition = F.monotonically_increasing_id().bitwiseAND((1 << ROW_BITS) - 1)
    labelled = (
        # xxhash64 skips nulls: rows of no run or node are kept out
        trace.filter(
            (delivery | (kind == "submit")) & F.col("run").isNotNull() & F.col("node").isNotNull()
        )
        .select(F.xxhash64("run", "node").alias("pair"), "i", "msg", delivery.alias("delivered"))
        .join(F.broadcast(groups), "pair")  # also keeps just the layout's runs
        .select("rid", "msg", key.alias("key"))
        .repartition(layout.partitions, "rid")
        .sortWithinPartitions("key")
        # right after the sort, the id counts the rows in sorted order; a (run, node)'s
        # first delivery lands on the row index that is its slot, the key's high bits
        .select(
            "rid",
            "msg",
            (F.col("key") != LAST).alias("delivered"),
            (in_partition - F.shiftright("key", I_BITS)).alias("label"),
        )
    )
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
