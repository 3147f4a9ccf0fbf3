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
faults after which no node installs a configuration are counted apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MS = 1e6


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
        )
    r = runs.select("run", "point", F.col("nodes").cast("int").alias("declared"))
    return per_run.join(F.broadcast(r), "run", "left").select(
        "run",
        "protocol",
        "scenario",
        F.coalesce("point", F.lit("-")).alias("point"),
        F.coalesce("declared", "seen").alias("nodes"),
        "tmax",
    )


def compute_metrics(
    trace: DataFrame, runs: DataFrame | None = None, *, timelines: list[str] | None = None
) -> dict[str, Any]:
    """Every metric of the module docstring, as a JSON-ready dict.

    ``timelines`` names runs whose membership history (views and faults per node)
    is included for the report; by default the first run with faults of each protocol.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ["protocol", "scenario", "point"]
    points = _points(trace, runs).cache()
    t = trace.join(F.broadcast(points.select("run", "point", "nodes")), "run").cache()
    try:
        d = t.filter(F.col("kind") == "deliver")
        per_run_d = d.groupBy("run").agg(
            F.count("*").alias("deliveries"), F.countDistinct("msg").alias("messages")
        )
        stats = (
            t.filter(F.col("kind") == "stats")
            .groupBy("run")
            .agg(
                F.sum(F.get_json_object("detail", "$.sent").try_cast("long")).alias("sent"),
                F.sum(F.get_json_object("detail", "$.sent_bytes").try_cast("long")).alias("bytes"),
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
            .fillna(0, ["deliveries", "messages", "sent", "bytes", "retransmits", "errors"])
            .withColumn("secs", F.greatest(F.col("tmax") / 1e9, F.lit(1e-9)))
        )
        rot_w = Window.partitionBy("run", "node").orderBy("i")
        rot = (
            t.filter(
                (F.col("kind") == "token") & (F.get_json_object("detail", "$.op") == "received")
            )
            .withColumn("gap", F.col("t") - F.lag("t").over(rot_w))
            .filter(F.col("gap").isNotNull())
            .groupBy(*keys)
            .agg(
                F.percentile_approx("gap", 0.5).alias("rot50"),
                F.percentile_approx("gap", 0.95).alias("rot95"),
            )
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
        bucket = F.floor(F.log10(F.greatest(F.col("lat"), F.lit(1))) * 10).cast("int")
        hist = lat.groupBy("protocol", bucket.alias("bucket")).count().orderBy("protocol", "bucket")
        latency_rows = _rows(latency)
        hist_rows = _rows(hist)
        lat.unpersist()
        convergence = _convergence(t)
        chosen = timelines if timelines is not None else _default_timelines(t)
        result = {
            "groups": _rows(groups),
            "latency": latency_rows,
            "latency_histogram": hist_rows,
            "convergence": convergence,
            "timelines": _timelines(t, chosen),
        }
    finally:
        t.unpersist()
        points.unpersist()
    return result


def _convergence(t: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    action = F.get_json_object("detail", "$.action")
    faults = (
        t.filter(F.col("kind") == "fault")
        .select("run", "protocol", "t", action.alias("action"))
        .distinct()
    )
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
    )
    out = per_fault.groupBy("protocol", "action").agg(
        F.count("*").alias("faults"),
        F.sum(F.col("took").isNull().cast("int")).alias("no_view_change"),
        F.percentile_approx("took", [0.5, 0.95]).alias("p"),
        F.max("took").alias("max"),
        F.collect_list(F.col("took") / MS).alias("samples_ms"),
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
            "samples_ms",
        ).orderBy("protocol", "action")
    )
    for r in rows:  # a bounded sample for the report's distribution plot
        r["samples_ms"] = sorted(r["samples_ms"])[:: max(1, len(r["samples_ms"]) // 200)]
    return rows


def _default_timelines(t: DataFrame) -> list[str]:
    from pyspark.sql import functions as F

    first = (
        t.filter(F.col("kind") == "fault")
        .groupBy("protocol")
        .agg(F.min("run").alias("run"))
        .orderBy("protocol")
    )
    return [r.run for r in first.collect()]


def _timelines(t: DataFrame, runs: list[str]) -> dict[str, list[dict[str, Any]]]:
    from pyspark.sql import functions as F

    if not runs:
        return {}
    rows = (
        t.filter(F.col("run").isin(*runs) & F.col("kind").isin("view", "fault"))
        .select(
            "run",
            "node",
            "t",
            "kind",
            "view",
            "members",
            "transitional",
            F.get_json_object("detail", "$.action").alias("action"),
        )
        .orderBy("run", "node", "t")
        .collect()
    )
    out: dict[str, list[dict[str, Any]]] = {r: [] for r in runs}
    for r in rows:
        out[r.run].append(r.asDict(recursive=True))
    return out
