"""mutual_exclusion: lock holds of different nodes never overlap within a run.

A hold runs from a ``lock`` row with ``detail.op`` = ``granted`` to the node's next
``released`` row, its crash or leave (a real cluster's node killed is judged crashed
where its trace ends), or the end of the run.

Fencing (a grant's ``detail.fence``, a number that grows with every grant, as Chubby's
sequencers): two overlapping holds whose fences are both non-zero and different are
the documented limit of a lease-based lock, not a violation: a resource that checks
fences refuses the lower-fenced holder (a paused holder, a stale token copy). Overlaps
with equal or missing fences stay violations; a protocol that gives no fence keeps the
strict rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks._intervals import hold_intervals, overlaps
from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "mutual_exclusion"
DESCRIPTION = "lock holds (granted to released, crash or end) of two nodes never overlap"


def inputs(protocol: str) -> set[str]:
    return {"lock"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    op = F.get_json_object("detail", "$.op")
    ev = ctx.rows.filter(
        in_protocols(protocols)
        & (
            ((F.col("kind") == "lock") & op.isin("granted", "released"))
            | ((F.col("kind") == "fault") & F.col("action").isin("crash", "leave"))
        )
    ).withColumn("granted", (F.col("kind") == "lock") & (op == "granted"))
    fence = F.coalesce(F.get_json_object("detail", "$.fence").cast("long"), F.lit(0))
    holds = hold_intervals(ev, "granted", ctx.run_ends(), ctx.judged_frame(), fence.alias("fence"))
    over = overlaps(holds, ["run"], carry=("fence",))
    fenced = (F.col("fence") > 0) & (F.col("other_fence") > 0)
    bad = over.filter(~(fenced & (F.col("fence") != F.col("other_fence"))))
    note = F.concat(
        F.col("node"),
        F.lit(" granted the lock while "),
        F.col("other"),
        F.lit(" held it"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("start"),
            F.array("other", "node"),
            None,
            None,
            F.array("other_start", "other_end", "start", "end"),
            note,
        )
    )
