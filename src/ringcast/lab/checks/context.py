"""The prepared trace a check reads: rows annotated once, with window functions.

Every row that a property looks at (deliveries, views, faults, locks, states,
leaders, submits, stats) is repartitioned by run, so that each later window or
aggregation keyed by run and something else needs no further shuffle, and then
annotated per node, in event order ``i``:

* ``action``: a fault's ``detail.action``; ``reset``: the node lost its state
  (crash, restart, join or leave), which ends its configuration, lock and token;
* ``cur``: the configuration the node is in at this row (the last ``view`` row,
  regular or transitional, since the last reset): ``view``, ``transitional``, ``vt``
  (when it was installed) and ``vi`` (the install's event index ``i``, which names its
  member list among the ``view`` rows), or null. The member list itself stays in the
  ``view`` row: copied into every later row of the node it would make the annotated
  rows grow with deliveries times members;
* ``prev_reg`` / ``next_reg``: the regular configuration installed before / after
  this row (null across a reset).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ringcast.lab.properties import total_orders
from ringcast.protocols.registry import HOST_KINDS
from ringcast.trace.schema import COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

MESSAGE_KINDS = ("deliver", "submit")
"""The kinds of a message's rows: the many rows of a trace, and the only ones with a
``msg`` and an ``order`` (:data:`MESSAGE_COLUMNS`)."""
TOKEN = "token"
"""A protocol's own kind, not a host's: Raincore and Totem list it in their specs'
``trace_kinds``. single_token reads its rows, of the protocols it is applied to that
declare it (:func:`~ringcast.lab.properties.declares_kind`)."""
SMALL_KINDS = tuple(k for k in HOST_KINDS if k not in MESSAGE_KINDS)
"""The host kinds with few rows: the annotation keeps every row of them, by name."""
KINDS = (*MESSAGE_KINDS, *SMALL_KINDS, TOKEN)
"""The kinds the checks see: every host kind of the registry
(:data:`~ringcast.protocols.registry.HOST_KINDS`) and :data:`TOKEN`. Rows are matched
by the kind's full name, so a protocol's own kind (``elected``, ``coord``,
``view_ack``, ...) is never taken for one of them."""
TOKEN_OPS = ("sent", "returned", "dropped")
"""The ``token`` rows the checks read (single_token): the token passed on or lost."""
RESET_ACTIONS = ("crash", "restart", "join", "leave")
KNOWN_ORDERS = ("agreed", "safe", "fifo")
"""The delivery orders of the trace schema (others are found too, more slowly)."""

ROW_COLUMNS = ("run", "protocol", *(c for c in COLUMNS if c not in ("run", "size")))
"""The columns the annotated rows keep (:attr:`CheckContext.rows`): the trace's but
``size``, and ``protocol``."""
MESSAGE_COLUMNS = ("msg", "order")
"""The columns only :data:`MESSAGE_KINDS` rows have (the trace schema): null in
the rows of a context that keeps no deliveries, whose scan then does not read them."""

VIOLATION_COLUMNS = ("run", "protocol", "t", "nodes", "msgs", "views", "times", "note")
"""Every check returns its violations with these columns (one row a counterexample)."""


def violation(
    run: Column | str,
    protocol: Column | str,
    t: Column,
    nodes: Column,
    msgs: Column | None,
    views: Column | None,
    times: Column,
    note: Column,
) -> list[Column]:
    """The select list of one violation row (``msgs``/``views`` None for empty)."""
    from pyspark.sql import functions as F

    empty = F.array().cast("array<string>")
    return [
        F.col(run).alias("run") if isinstance(run, str) else run.alias("run"),
        F.col(protocol).alias("protocol")
        if isinstance(protocol, str)
        else protocol.alias("protocol"),
        t.cast("long").alias("t"),
        nodes.cast("array<string>").alias("nodes"),
        (msgs if msgs is not None else empty).cast("array<string>").alias("msgs"),
        (views if views is not None else empty).cast("array<string>").alias("views"),
        times.cast("array<long>").alias("times"),
        note.cast("string").alias("note"),
    ]


@dataclass(frozen=True)
class NodeInfo:
    """One (run, node) of the trace, from :attr:`CheckContext.run_nodes`."""

    run: str
    protocol: str
    node: str
    deliveries: int
    imin: int
    imax: int
    tmax: int = 0
    clean_end: bool = False
    """Its last row is a ``stats`` row: the host stopped it (the runtime writes one as
    its last row at every stop; a process killed with ``kill -9`` writes none)."""
    states: bool = False
    """Its ``stats`` rows say the node's ``state`` (the simulator's do; the runtime's,
    written only when a node stops, do not)."""


@dataclass(frozen=True)
class JudgedCrash:
    """A node of a real cluster's trace judged crashed where its trace ends."""

    run: str
    node: str
    t: int

    def note(self) -> str:
        return (
            f"{self.node}'s trace ends at t={self.t / 1e6:.3f}ms without a clean stop "
            "(no stats row: the process was killed): judged crashed there"
        )


def judged_crashes(nodes: list[NodeInfo]) -> list[JudgedCrash]:
    """The nodes of real clusters' traces judged crashed at their last row.

    A run of the runtime (whose ``stats`` rows carry no ``state``) in which some node
    ended with a clean stop was stopped before it was checked (``cluster down``): each
    of its nodes whose trace ends otherwise was killed (``kill -9``, a power cut), and
    is judged crashed at its last row. A run in which no node ended so is a cluster
    still running: its nodes are taken as they say (a live node writes no last row).
    Simulated runs say each node's state in their ``stats`` rows and are not judged."""
    by_run: dict[str, list[NodeInfo]] = {}
    for n in nodes:
        by_run.setdefault(n.run, []).append(n)
    out = []
    for run, ns in sorted(by_run.items()):
        if any(n.states for n in ns) or not any(n.clean_end for n in ns):
            continue
        out += [JudgedCrash(run, n.node, n.tmax) for n in ns if not n.clean_end]
    return sorted(out, key=lambda j: (j.run, j.node))


@dataclass
class CheckContext:
    """The annotated trace shared by every check of one ``lab check``.

    ``trace`` has the trace columns plus ``protocol``; ``partitions`` is the number
    of run partitions (default: Spark's shuffle partitions). Frames are computed on
    first use and cached; :meth:`close` unpersists them.
    """

    trace: DataFrame
    partitions: int | None = None
    convergence_bound: float = 10.0
    progress_bound: int = 1_000_000_000
    safe_grace: int = 500_000_000
    token_protocols: frozenset[str] | None = None
    """Protocols whose :data:`TOKEN` rows (op sent/returned/dropped) are kept (for
    single_token); None keeps them for every protocol."""
    delivery_runs: frozenset[str] | None = None
    """Runs whose ``deliver`` and ``submit`` rows are kept (the runs some check reads
    deliveries of); None keeps them for every run."""
    runs: frozenset[str] | None = None
    """Runs whose rows are read at all (the runs this context's checks decide); None
    reads every run. The run inventory is still the whole trace's."""
    _cache: dict[str, Any] = field(default_factory=dict)

    def _cached(self, key: str, build: Any, *, checkpoint: bool = False) -> Any:
        """``build()``, computed once for this context. A DataFrame is persisted (memory,
        then disk), or with ``checkpoint`` made a local checkpoint (:meth:`shared`)."""
        if key not in self._cache:
            df = build()
            if checkpoint:
                df = df.localCheckpoint(eager=False)
            elif hasattr(df, "persist"):
                from pyspark import StorageLevel

                df = df.persist(StorageLevel.MEMORY_AND_DISK)
            self._cache[key] = df
        return self._cache[key]

    def shared(self, key: str, build: Any) -> DataFrame:
        """``build()``, computed once for this context: a small intermediate frame that
        a check reads on several branches of its plan. It is a local checkpoint, taken
        lazily (by the first job that reads it): the frames built on it start from its
        rows instead of repeating its lineage, which Spark would otherwise analyse,
        plan and run again on every branch (``DataFrame.localCheckpoint``; its blocks
        are the executors' cached blocks, freed with the frame)."""
        return self._cached("shared:" + key, build, checkpoint=True)  # type: ignore[no-any-return]

    def materialize(self) -> None:
        """Compute the annotated rows and the deliveries and hold them (one job each;
        none for deliveries where :attr:`delivery_runs` is empty), so that every check
        reads them from memory instead of the trace files."""
        self.rows.count()
        if self.delivery_runs is None or self.delivery_runs:
            self.deliveries.count()

    def with_deliveries(self, runs: frozenset[str]) -> CheckContext:
        """A context over the rows of ``runs`` alone that keeps their deliveries and
        submits and no token rows, sharing this one's run inventory (no new job)."""
        return self._sharing(
            replace(self, delivery_runs=runs, token_protocols=frozenset(), _cache={}), runs
        )

    def for_runs(self, runs: frozenset[str]) -> CheckContext:
        """A context over the rows of ``runs`` alone, otherwise like this one, sharing
        its run inventory (no new job): the checks of a few runs left by the screen
        annotate those runs' rows, not the whole trace's."""
        return self._sharing(replace(self, _cache={}), runs)

    def _sharing(self, other: CheckContext, runs: frozenset[str]) -> CheckContext:
        """``other`` reading ``runs`` only (every run: no filter), with this context's
        inventory."""
        if "inventory" in self._cache:
            other._cache["inventory"] = self._cache["inventory"]
            every = {r["run"] for r in self.run_info}
            other.runs = None if every <= runs else runs
        else:
            other.runs = runs
        return other

    def of_runs(self, df: DataFrame) -> DataFrame:
        """``df`` (rows with a ``run``) less the rows of runs this context does not read
        (:attr:`runs`)."""
        if self.runs is None:
            return df
        from pyspark.sql import functions as F

        wanted = small_frame(df.sparkSession, [(r,) for r in sorted(self.runs)], "run string")
        return df.join(F.broadcast(wanted), "run", "left_semi")

    def close(self) -> None:
        """Unpersist the cached frames, then let Python collect its garbage: py4j's
        proxy of a JVM object keeps the methods called on it, each pointing back to the
        proxy, so a proxy no longer used is freed only by the cycle collector, and until
        then it holds its JVM object (a check's query, its plan and broadcast tables:
        hundreds of MB on a large run) in the driver's heap."""
        for df in self._cache.values():
            if hasattr(df, "unpersist"):
                df.unpersist()
        self._cache.clear()
        gc.collect()

    # -------------------------------------------------------------- frames

    @property
    def rows(self) -> DataFrame:
        """The relevant rows, partitioned by run and annotated (see the module doc).
        Where :attr:`delivery_runs` is given, only the deliveries and submits (of those
        runs) keep their :data:`MESSAGE_COLUMNS`; in every other row they are null."""
        return self._cached("rows", self._build_rows)

    def _build_rows(self) -> DataFrame:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        # every host kind's rows by name; the token rows of the protocols that need them
        small = F.col("kind").isin(*SMALL_KINDS)
        token = (F.col("kind") == TOKEN) & F.get_json_object("detail", "$.op").isin(*TOKEN_OPS)
        if self.token_protocols is not None:
            token = (
                token & F.col("protocol").isin(*sorted(self.token_protocols))
                if self.token_protocols
                else F.lit(False)
            )
        big = F.col("kind").isin(*MESSAGE_KINDS)
        if self.delivery_runs is None:
            df = self.of_runs(self.trace.filter(big | small | token)).select(*ROW_COLUMNS)
        else:
            # only deliveries and submits have a msg and an order (the trace schema):
            # without them, the scan need not decode those columns of every row
            df = self.of_runs(self.trace.filter(small | token)).select(
                *(
                    F.lit(None).cast("string").alias(c) if c in MESSAGE_COLUMNS else c
                    for c in ROW_COLUMNS
                )
            )
        if self.delivery_runs:
            spark = self.trace.sparkSession
            runs = small_frame(spark, [(r,) for r in sorted(self.delivery_runs)], "run string")
            bigs = self.trace.filter(big).join(F.broadcast(runs), "run", "left_semi")
            df = df.unionByName(bigs.select(*ROW_COLUMNS))
        df = df.repartition(self.partitions, "run") if self.partitions else df.repartition("run")
        # one projection per step: every DataFrame step is analysed on the driver
        action = F.when(F.col("kind") == "fault", F.get_json_object("detail", "$.action"))
        reset = F.coalesce(action.isin(*RESET_ACTIONS), F.lit(False))
        df = df.select("*", action.alias("action"), reset.alias("reset"))
        is_view = F.col("kind") == "view"
        regular = is_view & ~F.coalesce(F.col("transitional"), F.lit(False))
        vstruct = F.when(
            is_view | F.col("reset"),
            F.struct(
                F.col("reset").alias("reset"),
                F.col("view").alias("view"),
                F.col("transitional").alias("transitional"),
                F.col("t").alias("vt"),
                F.col("i").alias("vi"),
            ),
        )
        rstruct = F.when(
            regular | F.col("reset"),
            F.struct(F.col("reset").alias("reset"), F.col("view").alias("view")),
        )
        w = Window.partitionBy("run", "node").orderBy("i")
        upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        before = w.rowsBetween(Window.unboundedPreceding, -1)
        # "the next one after this row" as a running frame over the reversed order:
        # an unbounded-following frame is recomputed per row (quadratic) by Spark
        after = (
            Window.partitionBy("run", "node")
            .orderBy(F.col("i").desc())
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        cur = F.last(vstruct, ignorenulls=True).over(upto)
        prev_reg = F.last(rstruct, ignorenulls=True).over(before)
        next_reg = F.last(rstruct, ignorenulls=True).over(after)
        kept = df.columns
        df = df.withColumns({"_cur": cur, "_prev": prev_reg, "_next": next_reg})
        return df.select(
            *kept,
            F.when(~F.col("_cur.reset"), F.col("_cur")).alias("cur"),
            F.when(~F.col("_prev.reset"), F.col("_prev.view")).alias("prev_reg"),
            F.when(~F.col("_next.reset"), F.col("_next.view")).alias("next_reg"),
        )

    @property
    def deliveries(self) -> DataFrame:
        """``deliver`` rows with ``sender`` and ``counter`` parsed from ``msg``."""

        def build() -> DataFrame:
            from pyspark.sql import functions as F

            d = self.rows.filter(F.col("kind") == "deliver").select(
                "run",
                "protocol",
                "node",
                "t",
                "i",
                "msg",
                "order",
                "view",
                F.when(F.col("cur").isNotNull(), F.struct("cur.view", "cur.vt", "cur.vi")).alias(
                    "cur"
                ),
                "prev_reg",
                "next_reg",
            )
            return d.withColumns({"sender": msg_sender(), "counter": msg_counter()})

        return self._cached("deliveries", build)

    def kind(self, name: str) -> DataFrame:
        """The annotated rows of one kind."""
        from pyspark.sql import functions as F

        return self.rows.filter(F.col("kind") == name)

    @property
    def run_info(self) -> list[dict[str, Any]]:
        """Per run (one small dict a run): protocol, the kinds of input it has (of
        :data:`KINDS`, ``deliver:<order>`` and ``token_state`` as well), its last time
        ``tmax`` and ``regular``, the most regular configurations one node installed."""
        return self._cached("inventory", self._build_inventory)[0]  # type: ignore[no-any-return]

    @property
    def run_nodes(self) -> list[NodeInfo]:
        """Per (run, node) of the trace: its protocol, deliveries and range of ``i``."""
        return self._cached("inventory", self._build_inventory)[1]  # type: ignore[no-any-return]

    def _build_inventory(self) -> tuple[list[dict[str, Any]], list[NodeInfo]]:
        """:attr:`run_info` and :attr:`run_nodes` from one job: a hash aggregation per
        (run, protocol, node) with numeric aggregates only (a collected set or a string
        maximum would make Spark sort every row), the tags as one bit set; per run,
        merged on the driver."""
        from pyspark.sql import functions as F

        kind = F.col("kind")
        deliver = kind == "deliver"
        tags = [*KINDS, *(f"deliver:{o}" for o in KNOWN_ORDERS), "token_state", "_other"]
        bit = {tag: F.lit(1 << n) for n, tag in enumerate(tags)}
        kinds = F.when(kind == KINDS[0], bit[KINDS[0]])  # deliver first: the most rows
        for k in KINDS[1:]:
            kinds = kinds.when(kind == k, bit[k])
        orders = F.when(F.col("order").isNull(), 0)
        for o in KNOWN_ORDERS:
            orders = orders.when(F.col("order") == o, bit[f"deliver:{o}"])
        orders = orders.otherwise(bit["_other"])
        token_state = (kind == "state") & F.get_json_object("detail", "$.token_state").isNotNull()
        bits = (
            kinds.otherwise(0)
            .bitwiseOR(F.when(deliver, orders).otherwise(0))
            .bitwiseOR(F.when(token_state, bit["token_state"]).otherwise(0))
        )
        regular = (kind == "view") & ~F.coalesce(F.col("transitional"), F.lit(False))
        stats = kind == "stats"
        # a stats row that says the node's state (few rows: parsed only for them)
        states = stats & F.get_json_object("detail", "$.state").isNotNull()
        # the per-row values in a projection of their own: there each comparison of
        # ``kind`` is made once a row, where inside the aggregate functions Spark's
        # generated code repeats the bit set's for each branch of its update
        per_node = (
            self.trace.select(
                "run",
                "protocol",
                "node",
                "t",
                "i",
                bits.alias("bits"),
                regular.cast("int").alias("regular"),
                deliver.cast("long").alias("deliver"),
                F.when(stats, F.col("i")).alias("stats_i"),
                states.cast("int").alias("states"),
            )
            .groupBy("run", "protocol", "node")
            .agg(
                F.bit_or("bits").alias("bits"),
                F.max("t").alias("tmax"),
                F.sum("regular").alias("regular"),
                F.sum("deliver").alias("deliveries"),
                F.min("i").alias("imin"),
                F.max("i").alias("imax"),
                F.max("stats_i").alias("stats_i"),
                F.max("states").alias("states"),
            )
            .collect()
        )
        nodes = [
            NodeInfo(
                r.run,
                r.protocol,
                r.node,
                int(r.deliveries),
                int(r.imin),
                int(r.imax),
                int(r.tmax),
                r.stats_i is not None and r.stats_i == r.imax,
                bool(r.states),
            )
            for r in per_node
        ]
        runs: dict[str, dict[str, Any]] = {}
        for r in per_node:
            info = runs.setdefault(
                r.run,
                {"run": r.run, "protocol": r.protocol, "bits": 0, "tmax": r.tmax, "regular": 0},
            )
            info["bits"] |= int(r.bits)
            info["tmax"] = max(info["tmax"], r.tmax)
            info["regular"] = max(info["regular"], int(r.regular or 0))
        others: dict[str, set[str]] = {}
        if any(info["bits"] & (1 << tags.index("_other")) for info in runs.values()):
            # orders beyond the schema's: rare
            other = deliver & ~F.coalesce(F.col("order").isin(*KNOWN_ORDERS), F.lit(True))
            for row in self.trace.filter(other).select("run", "order").distinct().collect():
                others.setdefault(row.run, set()).add(row.order)
        out = []
        for run in sorted(runs):
            info = runs[run]
            bits_ = info.pop("bits")
            info["tags"] = {t for n, t in enumerate(tags) if bits_ >> n & 1 and t != "_other"}
            info["tags"] |= {f"deliver:{o}" for o in others.get(run, ())}
            out.append(info)
        return out, nodes

    @property
    def judged(self) -> list[JudgedCrash]:
        """The nodes judged crashed where their trace ends (:func:`judged_crashes`)."""
        return judged_crashes(self.run_nodes)

    def judged_frame(self) -> DataFrame:
        """(run, node, judged_t): :attr:`judged` as a small DataFrame."""
        spark = self.trace.sparkSession
        data = [(j.run, j.node, j.t) for j in self.judged]
        return small_frame(spark, data, "run string, node string, judged_t long")

    def run_ends(self) -> DataFrame:
        """(run, tmax): the last time of each run, as a small DataFrame."""
        spark = self.trace.sparkSession
        data = [(r["run"], int(r["tmax"])) for r in self.run_info]
        return small_frame(spark, data, "run string, tmax long")


def small_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: str) -> DataFrame:
    """A small DataFrame of the driver's ``rows`` with ``schema`` ("name type, ..."),
    made through pandas and Arrow so that it is a local relation: a broadcast of it
    needs no Spark job, where one of a frame made from a list of rows first runs a job
    to collect the rows back from the executors."""
    import pandas as pd

    names = [field.split()[0] for field in schema.split(",")]
    # object columns: pandas would turn a long column with a None into floats
    columns = {n: pd.Series([row[k] for row in rows], dtype=object) for k, n in enumerate(names)}
    return spark.createDataFrame(pd.DataFrame(columns), schema)


def in_protocols(protocols: set[str] | frozenset[str]) -> Column:
    """A filter keeping the rows of ``protocols``."""
    from pyspark.sql import functions as F

    return F.col("protocol").isin(*sorted(protocols))


def total_order_filter(protocols: set[str] | frozenset[str]) -> Column:
    """Deliveries subject to total order: per protocol, its spec's ``total_orders``."""
    from pyspark.sql import functions as F

    cond = F.lit(False)
    for p in sorted(protocols):
        orders = total_orders(p)
        mine = F.col("protocol") == p
        if orders is not None:
            mine = mine & F.col("order").isin(*orders)
        cond = cond | mine
    return cond


def total_order_inputs(protocol: str) -> set[str]:
    """The run tags that give total order something to check for ``protocol``."""
    orders = total_orders(protocol)
    return {"deliver"} if orders is None else {f"deliver:{o}" for o in orders}


def members_key(col: str) -> Column:
    """A member list as one canonical string (sorted, joined): equal sets, equal keys."""
    from pyspark.sql import functions as F

    return F.array_join(F.array_sort(F.col(col)), "\u0001")


def msg_sender() -> Column:
    """The sender of a ``sender:counter`` message id: what comes before its last colon
    ("" without one). String functions, not a regular expression: this runs on every
    message of a trace."""
    from pyspark.sql import functions as F

    return F.expr(
        "CASE WHEN instr(msg, ':') > 0"
        " THEN left(msg, length(msg) - length(substring_index(msg, ':', -1)) - 1)"
        " WHEN msg IS NOT NULL THEN '' END"
    )


def msg_counter() -> Column:
    """The counter of a ``sender:counter`` message id: what follows its last colon when
    that is one or more ASCII digits (and fits a long), else null."""
    from pyspark.sql import functions as F

    return F.expr(
        "CASE WHEN instr(msg, ':') > 0"
        " AND length(substring_index(msg, ':', -1)) > 0"
        " AND translate(substring_index(msg, ':', -1), '0123456789', '') = ''"
        " THEN try_cast(substring_index(msg, ':', -1) AS BIGINT) END"
    )
