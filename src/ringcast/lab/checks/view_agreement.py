"""view_agreement: one member set per (run, regular configuration id).

Transitional configurations (Totem) are excluded: by definition they differ between
the previous configurations that merge into one new ring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, members_key, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "view_agreement"
DESCRIPTION = "every node that installs a configuration id installs it with the same members"


def inputs(protocol: str) -> set[str]:
    return {"view"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    views = ctx.kind("view").filter(
        in_protocols(protocols)
        & F.col("view").isNotNull()
        & ~F.coalesce(F.col("transitional"), F.lit(False))
    )
    # Member sets are compared as canonical strings: a set of arrays deduplicates on
    # the arrays' binary layout, which differs between sources for equal lists.
    per = views.groupBy("run", "protocol", "view").agg(
        F.collect_set(members_key("members")).alias("sets"),
        F.array_sort(F.collect_set("node")).alias("nodes"),
        F.min("t").alias("t"),
        F.max("t").alias("t1"),
        F.array_sort(
            F.collect_set(F.concat("node", F.lit("="), F.array_join(F.array_sort("members"), "+")))
        ).alias("by_node"),
    )
    bad = per.filter(F.size("sets") > 1)
    note = F.concat(F.lit("members differ: "), F.array_join("by_node", " "))
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("t"),
            F.col("nodes"),
            None,
            F.array("view"),
            F.array("t", "t1"),
            note,
        )
    )
