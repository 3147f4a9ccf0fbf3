"""What single passes over a trace cost in Spark on this machine: the floor under any
Spark SQL property check, on the synthetic traces of ``bench/lab_check.py``.

    python bench/spark_floor.py [--sizes 1000000 10000000] [--master local[2]] [--repeat 3]

Each pass is written to Spark's ``noop`` sink and timed; the session is warmed up on
the same data first, so the figures are steady-state (no JIT warm-up in them):

* scan: read every column of the trace;
* aggregate by run: one low-cardinality hash aggregation (what finding each run's
  inputs costs);
* aggregate by (run, node, msg): one high-cardinality hash aggregation (what taking
  each node's first delivery of each message costs);
* window per node: deliveries shuffled by run, sorted per (run, node) in event order
  and one ``lag`` (what any per-node sequence check costs: total order, FIFO, the
  configuration a delivery was made in).

A property suite that needs, per property, at least one of the last two cannot be
faster than the sum of those passes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_check import make_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from ringcast.lab.session import local_cores, spark_session

    spark = spark_session(args.master, shuffle_partitions=local_cores(args.master) or 2)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.sizes:
                path = Path(tmp) / f"trace-{size}.parquet"
                n = make_trace(size, path)
                df = spark.read.parquet(str(path))
                d = df.filter(F.col("kind") == "deliver").select("run", "node", "i", "t", "msg")
                w = Window.partitionBy("run", "node").orderBy("i")
                passes = {
                    "scan": df,
                    "aggregate by run": df.groupBy("run").agg(F.max("t"), F.count("*")),
                    "aggregate by (run, node, msg)": d.groupBy("run", "node", "msg").agg(
                        F.min("i"), F.min_by("t", "i")
                    ),
                    "window per node": d.repartition("run")
                    .withColumn("prev", F.lag("msg").over(w))
                    .filter(F.col("prev") == F.col("msg")),
                }
                for frame in passes.values():  # warm-up
                    frame.write.format("noop").mode("overwrite").save()
                for name, frame in passes.items():
                    walls = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        frame.write.format("noop").mode("overwrite").save()
                        walls.append(time.perf_counter() - t0)
                    wall = statistics.median(walls)
                    print(
                        f"{n:>10} events  {args.master:9} {name:<30} {wall:7.2f} s  "
                        f"{n / wall:12,.0f} events/s",
                        flush=True,
                    )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
