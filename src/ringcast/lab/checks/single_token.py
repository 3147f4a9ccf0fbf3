"""single_token: within one configuration at most one node is in token state Eating.

Raincore's ``state`` rows carry ``detail.token_state``. A node is eating from a row
with token state ``Eating`` (any case) and view state ``Agreement`` (or none recorded)
until the first of: its next ``state`` row with another token state, its next ``token``
row whose ``detail.op`` is ``sent``, ``returned`` or ``dropped`` (it passed the token
on), its crash or leave (a real cluster's node killed is judged crashed where its
trace ends), the end of the run. Two eating intervals of different nodes overlapping
in time are a violation when both nodes were in the same configuration when they
started eating. Nodes in different configurations are in a token-loss period (one
side lost the token or is cut off and regenerates its own, which is the protocol's
design): their overlaps are not violations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks._intervals import hold_intervals, overlaps
from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "single_token"
DESCRIPTION = "at most one node of a configuration in token state Eating at any time"


def inputs(protocol: str) -> set[str]:
    return {"token_state"}


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    from pyspark.sql import functions as F

    ts = F.lower(F.get_json_object("detail", "$.token_state"))
    # Eating on a copy that is not confirmed (view state Chaos or Reserve) is a stale or
    # rerouted copy: it grants no lock and commits nothing (Raincore decisions 14, 19).
    vs = F.coalesce(F.lower(F.get_json_object("detail", "$.view_state")), F.lit("agreement"))
    ev = (
        ctx.rows.filter(in_protocols(protocols))
        .withColumn("ts", ts)
        .filter(
            ((F.col("kind") == "state") & F.col("ts").isNotNull())
            | ((F.col("kind") == "fault") & F.col("action").isin("crash", "leave"))
            # the annotation keeps just the token rows whose op is one of TOKEN_OPS
            | (F.col("kind") == "token")
        )
        .withColumn(
            "eating", F.coalesce((F.col("ts") == "eating") & (vs == "agreement"), F.lit(False))
        )
    )
    scope = F.coalesce(F.col("cur.view"), F.lit("")).alias("scope")
    eating = hold_intervals(ev, "eating", ctx.run_ends(), ctx.judged_frame(), scope)
    bad = overlaps(eating, ["run", "scope"])
    note = F.concat(
        F.col("node"),
        F.lit(" and "),
        F.col("other"),
        F.lit(" both Eating in configuration "),
        F.col("scope"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("start"),
            F.array("other", "node"),
            None,
            F.array("scope"),
            F.array("other_start", "other_end", "start", "end"),
            note,
        )
    )
