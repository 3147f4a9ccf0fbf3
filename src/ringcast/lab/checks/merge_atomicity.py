"""merge_atomicity: a merge takes every subgroup whole, and one subgroup goes into one
merge at a time (JGroups' MERGE3 and its merge leader; a merge is all or nothing).

* a node's *source* for a regular configuration it installs is the regular one it
  was in just before (``prev_reg``: none across a crash, restart, join or leave);
* a *merge* configuration adds members to two or more of its sources (a source whose
  members it only drops is left, not merged: an exclusion);
* **partial**: just before the merge's first installation (its earliest ``t``) the
  network is whole (no ``partition`` fault yet, or the last one was followed by a
  ``heal``) and a node outside the merge is alive (its last crash, restart, join,
  leave, pause or resume before then, if any, is not a crash, leave or pause) and
  still in one of the merged sources: the merge left part of a subgroup behind;
* **overlapping**: two merges draw on one same source and share members, neither
  member set containing the other: two merge leaders each took part of one subgroup.

The reference, in plain Python over one run's rows, is ``merge_atomicity`` in
``tests/protocols/gms/checks.py``; the two are compared in the lab's tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ringcast.lab.checks.context import CheckContext, in_protocols, violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "merge_atomicity"
DESCRIPTION = (
    "a merge configuration takes every merged subgroup whole, and no two merges take "
    "overlapping parts of one subgroup"
)
DOWN = ("crash", "leave", "pause")
LIFE = ("crash", "restart", "join", "leave", "pause", "resume")


def inputs(protocol: str) -> set[str]:
    return {"view"}


def merges(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """Per merge configuration: run, protocol, view, ``vm`` (its members, sorted),
    ``sources`` and its first installation ``tf`` by ``first_node``."""
    from pyspark.sql import functions as F

    regular = ctx.kind("view").filter(
        in_protocols(protocols) & ~F.coalesce(F.col("transitional"), F.lit(False))
    )
    came = F.when(
        F.col("prev_reg").isNotNull() & (F.col("prev_reg") != F.col("view")), F.col("prev_reg")
    )
    per_view = regular.groupBy("run", "protocol", "view").agg(
        F.min(F.array_sort("members")).alias("vm"),
        F.array_sort(F.collect_set(came)).alias("sources"),
        F.min(F.struct("t", "node")).alias("first"),
    )
    members = per_view.select("run", F.col("view").alias("source"), F.col("vm").alias("sm"))
    exploded = per_view.select("run", "view", "vm", F.explode("sources").alias("source"))
    counted = (
        exploded.join(members, ["run", "source"], "left")
        .withColumn(
            "adds",
            F.size(F.array_except("vm", F.coalesce("sm", F.array().cast("array<string>")))) > 0,
        )
        .groupBy("run", "view")
        .agg(F.sum(F.col("adds").cast("int")).alias("adds"))
        .filter(F.col("adds") >= 2)
    )
    return per_view.join(counted.select("run", "view"), ["run", "view"]).select(
        "run",
        "protocol",
        "view",
        "vm",
        "sources",
        F.col("first.t").alias("tf"),
        F.col("first.node").alias("first_node"),
    )


def _state(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """Every node's configuration changes (``conf.v``: null after a reset) and life
    actions, as rows ``run, m, st, i, conf, life``."""
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols))
    return rows.filter(
        ((F.col("kind") == "view") & ~F.coalesce(F.col("transitional"), F.lit(False)))
        | F.col("action").isin(*LIFE)
    ).select(
        "run",
        F.col("node").alias("m"),
        F.col("t").alias("st"),
        "i",
        F.when(F.col("kind") == "view", F.struct(F.col("view").alias("v")))
        .when(F.col("reset"), F.struct(F.lit(None).cast("string").alias("v")))
        .alias("conf"),
        F.when(F.col("action").isin(*LIFE), F.col("action")).alias("life"),
    )


def _outsiders(probes: DataFrame, state: DataFrame, keys: list[str]) -> DataFrame:
    """Per probe (``keys``, with ``tp`` and the members ``vm``) and node ``m`` outside
    ``vm`` that is alive and in a configuration just before ``tp``: ``conf`` (its
    configuration) and ``lt`` (its last life action's time, null: none)."""
    from pyspark.sql import functions as F

    order = F.struct("st", "i")
    near = (
        probes.join(state, "run")
        .filter((F.col("st") < F.col("tp")) & ~F.array_contains("vm", F.col("m")))
        .groupBy(*keys, "m")
        .agg(
            F.max_by("conf", F.when(F.col("conf").isNotNull(), order)).alias("conf"),
            F.max_by("life", F.when(F.col("life").isNotNull(), order)).alias("life"),
            F.max(F.when(F.col("life").isNotNull(), F.col("st"))).alias("lt"),
        )
    )
    return near.filter(
        ~F.coalesce(F.col("life").isin(*DOWN), F.lit(False)) & F.col("conf.v").isNotNull()
    )


def _cuts(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """The run's partitions and heals: ``run, ct, cut, groups`` (one row a fault)."""
    from pyspark.sql import functions as F

    rows = ctx.rows.filter(in_protocols(protocols) & F.col("action").isin("partition", "heal"))
    groups = F.from_json(F.get_json_object("detail", "$.groups"), "array<array<string>>")
    return rows.groupBy("run", F.col("t").alias("ct"), F.col("action").alias("cut")).agg(
        F.first(groups, ignorenulls=True).alias("groups")
    )


def _partial(ctx: CheckContext, protocols: frozenset[str], found: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    keys = ["run", "protocol", "view", "vm", "sources", "tp", "first_node"]
    probes = found.withColumnRenamed("tf", "tp").select(*keys)
    # the network just before each first installation: whole unless partitioned
    last_cut = (
        probes.select("run", "view", "tp")
        .join(_cuts(ctx, protocols), "run")
        .filter(F.col("ct") < F.col("tp"))
        .groupBy("run", "view")
        .agg(F.max_by("cut", "ct").alias("cut"))
    )
    whole = probes.join(last_cut, ["run", "view"], "left").filter(
        F.col("cut").isNull() | (F.col("cut") == "heal")
    )
    near = _outsiders(whole.select(*keys), _state(ctx, protocols), keys)
    bad = near.filter(F.array_contains("sources", F.col("conf.v")))
    note = F.concat(
        F.lit("partial merge: "),
        F.col("first_node"),
        F.lit(" installed "),
        F.col("view"),
        F.lit(" ("),
        F.array_join("vm", "+"),
        F.lit(") without "),
        F.col("m"),
        F.lit(", alive and still in "),
        F.col("conf.v"),
        F.lit(", which it merges"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("tp"),
            F.array("first_node", "m"),
            None,
            F.array("view", "conf.v"),
            F.array("tp"),
            note,
        )
    )


def _after_heal(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    """Each node's first configuration adding members after a heal lacks no node that
    was on another side of the healed partition, has been alive since the heal and is
    in a configuration."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cuts = _cuts(ctx, protocols)
    # each heal with the groups of the partition it healed (the last one before it)
    w = Window.partitionBy("run").orderBy("ct")
    heals = (
        cuts.withColumn(
            "healed",
            F.last(F.when(F.col("cut") == "partition", F.col("groups")), ignorenulls=True).over(
                w.rowsBetween(Window.unboundedPreceding, -1)
            ),
        )
        .withColumn("next_ct", F.lead("ct").over(w))
        .filter((F.col("cut") == "heal") & F.col("healed").isNotNull())
        .select("run", F.col("ct").alias("th"), "next_ct", "healed")
    )
    regular = ctx.kind("view").filter(
        in_protocols(protocols)
        & ~F.coalesce(F.col("transitional"), F.lit(False))
        & F.col("prev_reg").isNotNull()
        & (F.col("prev_reg") != F.col("view"))
    )
    sizes = regular.groupBy("run", "view").agg(F.min(F.array_sort("members")).alias("pm"))
    adding = (
        regular.select("run", "protocol", "node", "t", "i", "view", "prev_reg", "members")
        .join(
            sizes.withColumnRenamed("view", "prev_reg"),
            ["run", "prev_reg"],
            "left",
        )
        .filter(
            F.size(F.array_except("members", F.coalesce("pm", F.array().cast("array<string>")))) > 0
        )
    )
    firsts = (
        adding.join(heals, "run")
        .filter(
            (F.col("t") > F.col("th"))
            & (F.col("next_ct").isNull() | (F.col("t") <= F.col("next_ct")))
        )
        .groupBy("run", "protocol", "node", "th", "healed")
        .agg(F.min(F.struct("t", "i", "view", "members")).alias("f"))
        .select(
            "run",
            "protocol",
            F.col("node").alias("n"),
            "th",
            "healed",
            F.col("f.t").alias("tp"),
            F.col("f.view").alias("view"),
            F.array_sort("f.members").alias("vm"),
        )
    )
    side = "array_max(transform(healed, (g, k) -> if(array_contains(g, {0}), k + 1, 0)))"
    keys = ["run", "protocol", "n", "th", "healed", "tp", "view", "vm"]
    near = _outsiders(firsts, _state(ctx, protocols), keys)
    bad = near.filter(
        (F.col("lt").isNull() | (F.col("lt") < F.col("th")))
        & (F.expr(side.format("m")) != F.expr(side.format("n")))
    )
    note = F.concat(
        F.lit("partial merge after the heal at "),
        (F.col("th") / 1e6).cast("string"),
        F.lit(" ms: "),
        F.col("n"),
        F.lit(" installed "),
        F.col("view"),
        F.lit(" ("),
        F.array_join("vm", "+"),
        F.lit(") without "),
        F.col("m"),
        F.lit(", alive since and in "),
        F.col("conf.v"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.col("tp"),
            F.array("n", "m"),
            None,
            F.array("view", "conf.v"),
            F.array("th", "tp"),
            note,
        )
    )


def _overlapping(found: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    one = found.select("run", "protocol", "view", "vm", "tf", F.explode("sources").alias("source"))
    other = one.select(
        "run",
        "source",
        F.col("view").alias("view2"),
        F.col("vm").alias("vm2"),
        F.col("tf").alias("tf2"),
    )
    pairs = (
        one.join(other, ["run", "source"])
        .filter(F.col("view") < F.col("view2"))
        .groupBy("run", "protocol", "view", "vm", "tf", "view2", "vm2", "tf2")
        .agg(F.array_sort(F.collect_set("source")).alias("shared"))
    )
    common = F.array_intersect("vm", "vm2")
    bad = pairs.filter(
        (F.size(common) > 0)
        & (F.size(F.array_except("vm", "vm2")) > 0)
        & (F.size(F.array_except("vm2", "vm")) > 0)
    )
    note = F.concat(
        F.lit("overlapping merges: "),
        F.col("view"),
        F.lit(" ("),
        F.array_join("vm", "+"),
        F.lit(") and "),
        F.col("view2"),
        F.lit(" ("),
        F.array_join("vm2", "+"),
        F.lit(") both merge "),
        F.array_join("shared", "+"),
    )
    return bad.select(
        *violation(
            "run",
            "protocol",
            F.greatest("tf", "tf2"),
            F.array_sort(common),
            None,
            F.array("view", "view2"),
            F.array("tf", "tf2"),
            note,
        )
    )


def violations(ctx: CheckContext, protocols: frozenset[str]) -> DataFrame:
    found = merges(ctx, protocols)
    return (
        _partial(ctx, protocols, found)
        .unionByName(_after_heal(ctx, protocols))
        .unionByName(_overlapping(found))
    )
