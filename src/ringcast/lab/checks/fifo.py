"""fifo: each node delivers the messages of one sender in increasing counter order.

Messages are ``sender:counter``; the first delivery of a message counts (duplicates
are integrity's business). Gaps are allowed: a lost message is the business of
virtual synchrony and safe delivery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "fifo"
DESCRIPTION = "per (receiver, sender), deliveries in increasing message counter"


def inputs(protocol: str) -> set[str]:
    return {"deliver"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    d = ctx.deliveries.filter(in_protocols(protocols) & F.col("counter").isNotNull())
    first = d.groupBy("run", "protocol", "node", "sender", "msg").agg(
        F.min("i").alias("i"),
        F.min_by("t", "i").alias("t"),
        F.min_by("counter", "i").alias("counter"),
    )
    w = Window.partitionBy("run", "node", "sender").orderBy("i")
    seq = first.withColumns({f"prev_{c}": F.lag(c).over(w) for c in ("counter", "msg", "t")})
    bad = seq.filter(F.col("counter") < F.col("prev_counter"))
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.array("node"),
            F.array("prev_msg", "msg"),
            None,
            F.array("prev_t", "t"),
            F.lit("delivered after a later message of the same sender"),
        )
    )
