"""merge_atomicity: a merge takes every subgroup whole, and one subgroup goes into one
merge at a time (JGroups' merge leader, which collects the views of every subgroup and
installs one merge view of all of them; a merge is all or nothing).

* a node's *source* for a regular configuration it installs is the regular one it
  was in just before (``prev_reg``: none across a crash, restart, join or leave);
* a *merge* configuration has two or more sources, none behind another, and adds
  members to each of them (a configuration inside one of its sources is an exclusion
  from it, whatever some of its installers missed on the way);
* a source is *behind* another of the same configuration, one subgroup seen before
  and after a view change some installers missed, when it is inside it, or when it
  came before it in the lineage of the other's creator (the node its id names, which
  installed both, this one first, with no crash, restart, join or leave between) and
  every node that came from it is a member of the other (GMS: C installs A:6 from A:3,
  A from A:5 = A:3 less E plus D, C in A:5: a join of the restarted E, not a merge). A
  node the newer view left out that comes back from the older one is a subgroup of its
  own: a merge;
* the *first installation* of a merge is its earliest ``t``, by ``first_node``; the
  network is *whole* just before it when no ``partition`` fault came before, or the
  last of the partitions and heals before it is a heal (at ``th``);
* a node is *alive* just before ``t`` when its last crash, restart, join, leave, pause
  or resume before then, if any, is not a crash, leave or pause.

It fails a run in which

* **partial**: just before a merge's first installation the network is whole and a
  node outside the merge is alive and still in one of the merged sources (the merge
  left part of a subgroup behind), unless its last life action is a resume less than
  :data:`HEAL_GRACE` before: a merge restarted without a member that never
  acknowledged it (paused) was decided while it was stopped, on the group as it was;
  or unless the heal that made the network whole came less than :data:`HEAL_GRACE`
  before: a merge restarted without a member cut off from its leader was decided
  before the heal, on the partition as it was;
* **partial after a heal**: just before a merge's first installation, at least
  :data:`HEAL_GRACE` after the heal that made the network whole, the merge takes
  members of two or more sides of the healed partition, and a node outside it that
  was on another side than ``first_node`` has been alive since the heal (no life
  action since) and is in a configuration (a subgroup the merge did not take at all).
  A merge installed sooner may have been decided before the heal, on the partition
  as it was;
* **overlapping**: two merges draw on one same source and share members, neither
  member set containing the other (two merge leaders each took part of one subgroup),
  nor one coming before the other in the lineage of the other's creator (a later
  merge that takes back a node the earlier one left behind, paused, is not a
  concurrent one).

The reference, in plain Python over one run's rows, is ``merge_atomicity`` in
``ringcast.lab.reference``; ``tests/lab/test_merge_atomicity.py`` compares them.
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
HEAL_GRACE = 250_000_000
"""ns after a heal before a merge is held to taking every side's live subgroups: a merge
leader's requests sent into a partition shorter than its own timeout are answered after
the heal, on what each side was then (measured under the hostile generator: such
merges are first installed 2-125 ms after the heal)."""
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
    # per view and source: the nodes that installed the view from that source
    who = (
        regular.filter(came.isNotNull())
        .groupBy("run", "view", came.alias("source"))
        .agg(F.collect_set("node").alias("who"))
    )
    exploded = per_view.select("run", "view", "vm", F.explode("sources").alias("source"))
    sized = (
        exploded.join(members, ["run", "source"], "left")
        .withColumn("sm", F.coalesce("sm", F.array().cast("array<string>")))
        .join(who, ["run", "view", "source"], "left")
    )
    # a source behind another source of the same view is that subgroup before a view
    # change some installers missed, not a second subgroup: inside it, or before it in
    # its creator's lineage with every installer (from it) a member of it
    other = sized.select("run", "view", F.col("source").alias("other"), F.col("sm").alias("om"))
    pairs = sized.join(other, ["run", "view"]).filter(F.col("source") != F.col("other"))
    inside = (F.size(F.array_except("sm", "om")) == 0) & (F.size("sm") < F.size("om"))
    kept = F.size(F.array_except(F.coalesce("who", F.array()), "om")) == 0
    inner = pairs.filter(inside).select("run", "view", "source")
    lineage = _lineage(ctx, protocols, pairs.filter(~inside & kept))
    inner = inner.unionByName(lineage).distinct().withColumn("inner", F.lit(True))
    counted = (
        sized.join(inner, ["run", "view", "source"], "left")
        .withColumn("adds", F.size(F.array_except("vm", "sm")) > 0)
        .groupBy("run", "view")
        .agg(
            F.sum(F.col("adds").cast("int")).alias("adds"),
            F.count("*").alias("n"),
            F.sum(F.when(F.col("inner").isNull(), 1).otherwise(0)).alias("subgroups"),
        )
        .filter((F.col("adds") >= 2) & (F.col("adds") == F.col("n")) & (F.col("subgroups") >= 2))
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


def _lineage(ctx: CheckContext, protocols: frozenset[str], pairs: DataFrame) -> DataFrame:
    """The ``run, view, source`` of ``pairs`` whose ``source`` came before ``other`` in
    the lineage of ``other``'s creator (the node its id names before the colon): that
    node installed ``source``, then ``other``, with no crash, restart, join or leave
    between."""
    from pyspark.sql import functions as F

    asked = pairs.select(
        "run", "view", "source", "other", F.substring_index("other", ":", 1).alias("node")
    )
    rows = ctx.rows.filter(in_protocols(protocols))
    regular = rows.filter(
        (F.col("kind") == "view") & ~F.coalesce(F.col("transitional"), F.lit(False))
    )
    installed = regular.select("run", "node", F.col("view").alias("x"), "i")
    resets = rows.filter(F.col("reset")).select("run", "node", F.col("i").alias("ri"))
    spans = (
        asked.join(
            installed.withColumnRenamed("x", "source").withColumnRenamed("i", "ip"),
            ["run", "node", "source"],
        )
        .join(
            installed.withColumnRenamed("x", "other").withColumnRenamed("i", "io"),
            ["run", "node", "other"],
        )
        .filter(F.col("ip") < F.col("io"))
    )
    broken = spans.join(resets, ["run", "node"]).filter(
        (F.col("ri") > F.col("ip")) & (F.col("ri") < F.col("io"))
    )
    keys = ["run", "view", "source", "other", "ip", "io"]
    return spans.join(broken.select(*keys), keys, "left_anti").select("run", "view", "source")


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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ["run", "protocol", "view", "vm", "sources", "tp", "first_node", "th", "healed"]
    cuts = _cuts(ctx, protocols)
    # each cut with the groups of the last partition before it
    w = Window.partitionBy("run").orderBy("ct").rowsBetween(Window.unboundedPreceding, -1)
    cuts = cuts.withColumn(
        "healed",
        F.last(F.when(F.col("cut") == "partition", F.col("groups")), ignorenulls=True).over(w),
    )
    probes = found.withColumnRenamed("tf", "tp")
    # the network just before each first installation: whole unless partitioned
    last_cut = (
        probes.select("run", "view", "tp")
        .join(cuts, "run")
        .filter(F.col("ct") < F.col("tp"))
        .groupBy("run", "view")
        .agg(F.max_by(F.struct("cut", "ct", "healed"), "ct").alias("c"))
    )
    whole = (
        probes.join(last_cut, ["run", "view"], "left")
        .filter(F.col("c").isNull() | (F.col("c.cut") == "heal"))
        .select(
            *[k for k in keys if k not in ("th", "healed")],
            F.col("c.ct").alias("th"),
            F.col("c.healed").alias("healed"),
        )
    )
    near = _outsiders(whole, _state(ctx, protocols), keys)
    side = (
        "coalesce(array_max(transform(healed, (g, k) -> if(array_contains(g, {0}), k + 1, 0))), 0)"
    )
    sides = "size(array_distinct(transform(vm, x -> " + side.format("x") + ")))"
    source = F.array_contains("sources", F.col("conf.v"))
    resumed = F.coalesce(
        (F.col("life") == "resume") & (F.col("tp") - F.col("lt") < HEAL_GRACE), F.lit(False)
    )
    # a merge first installed less than HEAL_GRACE after the heal may have been decided
    # before it, without a member it could not reach then
    just_healed = F.coalesce(F.col("tp") - F.col("th") < HEAL_GRACE, F.lit(False))
    in_source = source & ~resumed & ~just_healed
    after_heal = (
        ~source
        & F.col("healed").isNotNull()
        & (F.col("tp") - F.col("th") >= HEAL_GRACE)
        & (F.expr(sides) >= 2)
        & (F.expr(side.format("m")) != F.expr(side.format("first_node")))
        & (F.col("lt").isNull() | (F.col("lt") < F.col("th")))
    )
    bad = near.filter(in_source | after_heal)
    note = F.when(
        in_source,
        F.concat(
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
        ),
    ).otherwise(
        F.concat(
            F.lit("partial merge after the heal at "),
            F.format_number(F.col("th") / 1e6, 1),
            F.lit(" ms: "),
            F.col("first_node"),
            F.lit(" installed "),
            F.col("view"),
            F.lit(" ("),
            F.array_join("vm", "+"),
            F.lit(") without "),
            F.col("m"),
            F.lit(", from another side, alive since and in "),
            F.col("conf.v"),
        )
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


def _overlapping(ctx: CheckContext, protocols: frozenset[str], found: DataFrame) -> DataFrame:
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
    crossed = pairs.filter(
        (F.size(common) > 0)
        & (F.size(F.array_except("vm", "vm2")) > 0)
        & (F.size(F.array_except("vm2", "vm")) > 0)
    )
    # one before the other in the lineage of the other's creator: a later merge that
    # takes a node the earlier one left behind, not a concurrent one
    pair = F.struct(F.col("view").alias("a"), F.col("view2").alias("b")).alias("view")
    forward = crossed.select(
        "run", pair, F.col("view").alias("source"), F.col("view2").alias("other")
    )
    backward = crossed.select(
        "run", pair, F.col("view2").alias("source"), F.col("view").alias("other")
    )
    ordered = _lineage(ctx, protocols, forward.unionByName(backward)).select(
        "run", F.col("view.a").alias("view"), F.col("view.b").alias("view2")
    )
    bad = crossed.join(ordered.distinct(), ["run", "view", "view2"], "left_anti")
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
    # a few rows a run, read by both rules, each on two branches
    found = ctx.shared(f"{NAME}:{','.join(sorted(protocols))}", lambda: merges(ctx, protocols))
    return _partial(ctx, protocols, found).unionByName(_overlapping(ctx, protocols, found))
