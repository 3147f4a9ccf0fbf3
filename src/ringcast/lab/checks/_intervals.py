"""Overlap of per-node hold intervals (locks, token): shared by two checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def hold_intervals(
    events: DataFrame, starts: str, run_ends: DataFrame, judged: DataFrame, *extra: Column
) -> DataFrame:
    """Per-node intervals from an event stream: each row whose boolean column ``starts``
    is true opens an interval that the node's next other row closes, or else the node's
    judged crash (``judged_t`` of ``judged``: a real cluster's node killed, whose trace
    ends there), or else the run's end (``tmax`` of ``run_ends``). Returns run,
    protocol, node, start, end and ``extra``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # The next end after each row, as a running frame over the reversed order (an
    # unbounded-following frame is recomputed per row by Spark: quadratic).
    w = (
        Window.partitionBy("run", "node")
        .orderBy(F.col("i").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    ends = F.last(F.when(~F.col(starts), F.col("t")), ignorenulls=True).over(w)
    return (
        events.withColumn("_next_end", ends)
        .filter(starts)
        .join(F.broadcast(run_ends), "run")
        .join(F.broadcast(judged), ["run", "node"], "left")
        .select(
            "run",
            "protocol",
            "node",
            F.col("t").alias("start"),
            F.coalesce("_next_end", "judged_t", "tmax").alias("end"),
            *extra,
        )
    )


def overlaps(intervals: DataFrame, scope: list[str], carry: tuple[str, ...] = ()) -> DataFrame:
    """Rows of ``intervals`` (run, protocol, node, start, end, + ``scope`` columns) that
    start before an interval of another node in the same scope has ended.

    Ordered by start within the scope, each interval is compared with the running
    maximum end of the intervals before it; the result adds ``other`` (node),
    ``other_start`` and ``other_end``. Intervals of one node never overlap each other,
    so the interval ending last before a start is the one to compare with. ``carry``
    names columns of that other interval to keep too, as ``other_<name>``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = (
        Window.partitionBy(*scope)
        .orderBy("start", "node")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    prev = F.max(F.struct(F.col("end"), F.col("node"), F.col("start"), *carry)).over(w)
    x = intervals.withColumn("_prev", prev)
    return x.filter(
        (F.col("start") < F.col("_prev.end")) & (F.col("node") != F.col("_prev.node"))
    ).select(
        *intervals.columns,
        F.col("_prev.node").alias("other"),
        F.col("_prev.start").alias("other_start"),
        F.col("_prev.end").alias("other_end"),
        *(F.col(f"_prev.{c}").alias(f"other_{c}") for c in carry),
    )
