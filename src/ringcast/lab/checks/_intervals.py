"""Overlap of per-node hold intervals (locks, token): shared by two checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def overlaps(intervals: DataFrame, scope: list[str]) -> DataFrame:
    """Rows of ``intervals`` (run, protocol, node, start, end, + ``scope`` columns) that
    start before an interval of another node in the same scope has ended.

    Ordered by start within the scope, each interval is compared with the running
    maximum end of the intervals before it; the result adds ``other`` (node),
    ``other_start`` and ``other_end``. Intervals of one node never overlap each other,
    so the interval ending last before a start is the one to compare with.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = (
        Window.partitionBy(*scope)
        .orderBy("start", "node")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    prev = F.max(F.struct(F.col("end"), F.col("node"), F.col("start"))).over(w)
    x = intervals.withColumn("_prev", prev)
    return x.filter(
        (F.col("start") < F.col("_prev.end")) & (F.col("node") != F.col("_prev.node"))
    ).select(
        *intervals.columns,
        F.col("_prev.node").alias("other"),
        F.col("_prev.start").alias("other_start"),
        F.col("_prev.end").alias("other_end"),
    )
