"""Measuring the protocols over their traces, as Spark aggregations.

Per protocol, scenario and parameter point (the sweep's ``runs.parquet``; "-" for
traces without one):

* throughput: deliveries and distinct delivered messages per simulated second;
* latency: submit-to-deliver percentiles (p50, p95, p99, max) per delivery order;
* cost: protocol messages and bytes sent (``stats`` rows) per delivered message;
* retransmissions (``retransmit`` rows) per delivered message;
* token rotation: time between two receptions of the token at one node (``token``
  rows with ``detail.op`` = ``received``).

Per protocol and fault action, the convergence time: from the fault to the last
configuration installed by any node before the next fault (or the end of the run);
faults after which no node installs a configuration are counted apart. The same per run
and fault action (``run_convergence``), and per run the messages submitted that no node
delivered (``undelivered``), for the side-by-side of a simulated and a live run
(:mod:`ringcast.lab.twins`).

For the report's charts also: the same throughput and cost per run (with its seed
and the fault actions it saw), and the latency distribution as a histogram per
protocol, delivery order and the run's faults, in buckets of a twentieth of a decade
(``LATENCY_BUCKETS_PER_DECADE``), from which the report draws its CDFs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MS = 1e6
LATENCY_BUCKETS_PER_DECADE = 20
"""Latency bucket k holds latencies in [10^(k/20), 10^((k+1)/20)) ns: 12 % wide."""
MEASURED_KINDS = ("deliver", "submit", "stats", "retransmit", "sim_error", "fault", "view")
"""The kinds of row a metric counts (and ``token`` rows of a reception)."""
SAMPLES = 200
"""At most this many convergence samples (evenly spaced in rank) per protocol and fault."""


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _points(trace: DataFrame, runs: DataFrame | None) -> DataFrame:
    """(run, protocol, scenario, point, nodes) for every run of ``trace``."""
    from pyspark.sql import functions as F

    per_run = trace.groupBy("run", "protocol", "scenario").agg(
        F.countDistinct(F.when(F.col("kind") != "sim_error", F.col("node"))).alias("seen"),
        F.max("t").alias("tmax"),
    )
    if runs is None:
        return per_run.select(
            "run",
            "protocol",
            "scenario",
            F.lit("-").alias("point"),
            F.col("seen").alias("nodes"),
            "tmax",
            F.lit(None).cast("long").alias("seed"),
            F.lit(None).cast("string").alias("params"),
        )
    r = runs.select("run", "point", "seed", "params", F.col("nodes").cast("int").alias("declared"))
    return per_run.join(F.broadcast(r), "run", "left").select(
        "run",
        "protocol",
        "scenario",
        F.coalesce("point", F.lit("-")).alias("point"),
        F.coalesce("declared", "seen").alias("nodes"),
        "tmax",
        F.col("seed").cast("long").alias("seed"),
        F.col("params").cast("string").alias("params"),
    )


def compute_metrics(trace: DataFrame, runs: DataFrame | None = None) -> dict[str, Any]:
    """Every metric of the module docstring, as a JSON-ready dict."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ["protocol", "scenario", "point"]
    action = F.get_json_object("detail", "$.action")
    faulted = (
        trace.filter(F.col("kind") == "fault")
        .groupBy("run")
        .agg(F.array_join(F.array_sort(F.collect_set(action)), "+").alias("faults"))
    )
    points = (
        _points(trace, runs)
        .join(faulted, "run", "left")
        .withColumn("faults", F.coalesce("faults", F.lit("none")))
        .cache()
    )
    # only the rows and fields a metric reads, the JSON fields parsed once: the cached
    # frame holds no ``detail`` text and no rows of the kinds no metric counts
    kind = F.col("kind")
    received = (kind == "token") & (F.get_json_object("detail", "$.op") == "received")
    stat = kind == "stats"
    slim = trace.filter(kind.isin(*MEASURED_KINDS) | received).select(
        "run", "protocol", "scenario", "node", "t", "i", "kind", "msg", "order",
        F.when(kind == "fault", action).alias("action"),
        F.when(stat, F.get_json_object("detail", "$.sent").try_cast("long")).alias("sent"),
        F.when(stat, F.get_json_object("detail", "$.sent_bytes").try_cast("long")).alias(
            "sent_bytes"
        ),
    )  # fmt: skip
    t = slim.join(F.broadcast(points.select("run", "point", "nodes", "faults")), "run").cache()
    try:
        d = t.filter(F.col("kind") == "deliver")
        per_run_d = d.groupBy("run").agg(
            F.count("*").alias("deliveries"), F.countDistinct("msg").alias("messages")
        )
        submitted = (
            t.filter(F.col("kind") == "submit")
            .select("run", "msg")
            .distinct()
            .join(d.select("run", "msg").distinct(), ["run", "msg"], "left_anti")
            .groupBy("run")
            .agg(F.count("*").alias("undelivered"))
        )
        stats = (
            t.filter(F.col("kind") == "stats")
            .groupBy("run")
            .agg(
                F.sum("sent").alias("sent"),
                F.sum("sent_bytes").alias("bytes"),
            )
        )
        retr = (
            t.filter(F.col("kind") == "retransmit")
            .groupBy("run")
            .agg(F.count("*").alias("retransmits"))
        )
        errors = (
            t.filter(F.col("kind") == "sim_error").groupBy("run").agg(F.count("*").alias("errors"))
        )
        per_run = (
            points.join(per_run_d, "run", "left")
            .join(stats, "run", "left")
            .join(retr, "run", "left")
            .join(errors, "run", "left")
            .join(submitted, "run", "left")
            .fillna(
                0,
                ["deliveries", "messages", "sent", "bytes", "retransmits", "errors", "undelivered"],
            )
            .withColumn("secs", F.greatest(F.col("tmax") / 1e9, F.lit(1e-9)))
        )
        rot_w = Window.partitionBy("run", "node").orderBy("i")
        rot = (
            t.filter(F.col("kind") == "token")  # the receptions of the token only
            .withColumn("gap", F.col("t") - F.lag("t").over(rot_w))
            .filter(F.col("gap").isNotNull())
            .groupBy(*keys)
            .agg(
                F.percentile_approx("gap", 0.5).alias("rot50"),
                F.percentile_approx("gap", 0.95).alias("rot95"),
            )
        )
        per_run = per_run.cache()
        run_rows = _rows(
            per_run.select(
                "run",
                *keys,
                "seed",
                "params",
                "nodes",
                "faults",
                "errors",
                "undelivered",
                (F.col("deliveries") / F.col("secs")).alias("deliveries_per_s"),
                (F.col("messages") / F.col("secs")).alias("messages_per_s"),
                (F.col("sent") / F.greatest(F.col("messages"), F.lit(1))).alias(
                    "packets_per_message"
                ),
                (F.col("bytes") / F.greatest(F.col("messages"), F.lit(1))).alias(
                    "bytes_per_message"
                ),
                (F.col("retransmits") / F.greatest(F.col("messages"), F.lit(1))).alias(
                    "retransmits_per_message"
                ),
            ).orderBy(*keys, "run")
        )
        groups = (
            per_run.groupBy(*keys)
            .agg(
                F.first("nodes").alias("nodes"),
                F.count("*").alias("runs"),
                F.sum("errors").alias("errors"),
                F.avg(F.col("deliveries") / F.col("secs")).alias("deliveries_per_s"),
                F.avg(F.col("messages") / F.col("secs")).alias("messages_per_s"),
                (F.sum("sent") / F.greatest(F.sum("messages"), F.lit(1))).alias(
                    "packets_per_message"
                ),
                (F.sum("bytes") / F.greatest(F.sum("messages"), F.lit(1))).alias(
                    "bytes_per_message"
                ),
                F.sum("retransmits").alias("retransmits"),
                (F.sum("retransmits") / F.greatest(F.sum("messages"), F.lit(1))).alias(
                    "retransmits_per_message"
                ),
            )
            .join(rot, keys, "left")
            .withColumn("token_rotation_p50_ms", F.col("rot50") / MS)
            .withColumn("token_rotation_p95_ms", F.col("rot95") / MS)
            .drop("rot50", "rot95")
            .orderBy(*keys)
        )
        subs = t.filter(F.col("kind") == "submit").groupBy("run", "msg").agg(F.min("t").alias("ts"))
        lat = d.join(subs, ["run", "msg"]).withColumn("lat", F.col("t") - F.col("ts"))
        lat = lat.withColumn("order", F.coalesce("order", F.lit("-"))).cache()
        latency = (
            lat.groupBy(*keys, "order")
            .agg(
                F.count("*").alias("deliveries"),
                F.percentile_approx("lat", [0.5, 0.95, 0.99]).alias("p"),
                F.max("lat").alias("max"),
            )
            .select(
                *keys,
                "order",
                "deliveries",
                (F.col("p")[0] / MS).alias("p50_ms"),
                (F.col("p")[1] / MS).alias("p95_ms"),
                (F.col("p")[2] / MS).alias("p99_ms"),
                (F.col("max") / MS).alias("max_ms"),
            )
            .orderBy(*keys, "order")
        )
        per_decade = LATENCY_BUCKETS_PER_DECADE
        bucket = F.floor(F.log10(F.greatest(F.col("lat"), F.lit(1))) * per_decade).cast("int")
        hist = (
            lat.groupBy("protocol", "order", "faults", bucket.alias("bucket"))
            .agg(
                F.count("*").alias("count"),
                F.array_sort(F.collect_set("scenario")).alias("scenarios"),
            )
            .orderBy("protocol", "order", "faults", "bucket")
        )
        latency_rows = _rows(latency)
        hist_rows = _rows(hist)
        lat.unpersist()
        convergence, run_convergence = _convergence(t)
        result = {
            "run_convergence": run_convergence,
            "groups": _rows(groups),
            "runs": run_rows,
            "latency": latency_rows,
            "latency_histogram": hist_rows,
            "latency_buckets_per_decade": per_decade,
            "convergence": convergence,
        }
        per_run.unpersist()
    finally:
        t.unpersist()
        points.unpersist()
    return result


def _convergence(t: DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The convergence rows per protocol and fault action, and per run and action."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    faults = t.filter(F.col("kind") == "fault").select("run", "protocol", "t", "action").distinct()
    w = Window.partitionBy("run").orderBy("t", "action")
    faults = faults.withColumn("next_t", F.lead("t").over(w))
    ends = t.groupBy("run").agg(F.max("t").alias("tmax"))
    views = t.filter(F.col("kind") == "view").select("run", F.col("t").alias("vt"))
    per_fault = (
        faults.join(ends, "run")
        .withColumn("until", F.coalesce("next_t", F.col("tmax") + 1))
        .join(views, "run", "left")
        .withColumn(
            "vt",
            F.when((F.col("vt") >= F.col("t")) & (F.col("vt") < F.col("until")), F.col("vt")),
        )
        .groupBy("run", "protocol", "t", "action")
        .agg(F.max("vt").alias("last_view"))
        .withColumn("took", F.col("last_view") - F.col("t"))
        .cache()
    )
    per_run = _rows(
        per_fault.groupBy("run", "action")
        .agg(
            F.count("*").alias("faults"),
            F.sum(F.col("took").isNull().cast("int")).alias("no_view_change"),
            (F.percentile_approx("took", 0.5) / MS).alias("p50_ms"),
        )
        .orderBy("run", "action")
    )
    out = per_fault.groupBy("protocol", "action").agg(
        F.count("*").alias("faults"),
        F.sum(F.col("took").isNull().cast("int")).alias("no_view_change"),
        F.percentile_approx("took", [0.5, 0.95]).alias("p"),
        F.max("took").alias("max"),
        F.collect_list(
            F.struct(
                (F.col("took") / MS).alias("took_ms"),
                "run",
                (F.col("t") / MS).alias("at_ms"),
            )
        ).alias("samples"),
    )
    rows = _rows(
        out.select(
            "protocol",
            "action",
            "faults",
            "no_view_change",
            (F.col("p")[0] / MS).alias("p50_ms"),
            (F.col("p")[1] / MS).alias("p95_ms"),
            (F.col("max") / MS).alias("max_ms"),
            "samples",
        ).orderBy("protocol", "action")
    )
    for r in rows:  # a bounded sample for the report's distribution plot
        done = sorted(
            (s for s in r["samples"] if s["took_ms"] is not None),
            key=lambda s: (s["took_ms"], s["run"], s["at_ms"]),
        )
        r["samples"] = done[:: max(1, -(-len(done) // SAMPLES))]
        r["samples_ms"] = [s["took_ms"] for s in r["samples"]]
    per_fault.unpersist()
    return rows, per_run
