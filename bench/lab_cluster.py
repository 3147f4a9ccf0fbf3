"""The lab on one machine against a two-worker standalone cluster, in the same run.

    python bench/lab_cluster.py [--sweep sweeps/default.toml] [--seeds 1] [--repeat 2]

Starts a Spark standalone master and two one-core workers on loopback from the
installed PySpark (``ringcast.lab.localcluster``; the workers' Python has no
ringcast, so the driver ships it), then alternates ``local[2]`` and the cluster,
``--repeat`` times each. Each measurement is a fresh driver process (one
SparkSession per process) that starts its session, ships ringcast (cluster only),
runs the sweep, and checks its traces twice (cold, then warm in the same JVM). Prints
one line per measurement and a JSON summary: sweep runs/s, check events/s, the
session's start and the shipping's time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(master: str, sweep_file: str, seeds: int, out: str, python: str | None) -> None:
    """One measurement in this process: session, sweep, two checks."""
    from ringcast.lab.grid import load_sweep
    from ringcast.lab.load import load_traces
    from ringcast.lab.pipeline import check_paths
    from ringcast.lab.session import shipped, spark_session, where
    from ringcast.lab.sweep import run_sweep

    conf = {"spark.executor.memory": "512m"}
    if python:
        conf["spark.pyspark.python"] = python
    t0 = time.perf_counter()
    spark = spark_session(master, conf=conf)
    start = time.perf_counter() - t0
    ship = shipped(spark)
    sweep = load_sweep(Path(sweep_file), seeds=seeds)
    summary = run_sweep(spark, sweep, out)
    events = load_traces(spark, [out]).count()
    checks = []
    for _ in range(2):
        t0 = time.perf_counter()
        check_paths(spark, [out])
        checks.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "master": master,
                "where": where(spark).line(),
                "session_s": round(start, 2),
                "ship_s": round(ship.seconds, 3) if ship else None,
                "ship_kib": round(ship.bytes / 1024) if ship else None,
                "runs": summary["runs"],
                "sweep_s": summary["wall_s"],
                "runs_per_s": summary["runs_per_second"],
                "events": events,
                "check_cold_s": round(checks[0], 2),
                "check_warm_s": round(checks[1], 2),
                "events_per_s_warm": round(events / checks[1]),
            }
        ),
        flush=True,
    )
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default=str(Path("sweeps") / "default.toml"))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--child", nargs=5, metavar=("MASTER", "SWEEP", "SEEDS", "OUT", "PY"))
    args = ap.parse_args()
    if args.child:
        master, sweep, seeds, out, python = args.child
        child(master, sweep, int(seeds), out, python if python != "-" else None)
        return

    from ringcast.lab.localcluster import LocalCluster, bare_python

    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_MASTER", "SPARK_REMOTE")}
    env.update(RINGCAST_DRIVER_MEMORY="1g", SPARK_LOCAL_IP="127.0.0.1")
    results: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        python = bare_python(Path(tmp) / "python")
        cluster = LocalCluster(Path(tmp) / "cluster", python=python)
        t0 = time.perf_counter()
        cluster.start(workers=2)
        print(f"cluster {cluster.master} up in {time.perf_counter() - t0:.1f} s", flush=True)
        try:
            for k in range(args.repeat):
                for name, master, py in (
                    ("local[2]", "local[2]", "-"),
                    ("cluster", cluster.master, str(python)),
                ):
                    out = str(Path(tmp) / f"out-{name.split('[')[0]}-{k}")  # no glob characters
                    cmd = [sys.executable, __file__, "--child", master, args.sweep]
                    proc = subprocess.run(
                        [*cmd, str(args.seeds), out, py],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if proc.returncode != 0:
                        sys.exit(f"{name} failed:\n{proc.stderr[-3000:]}")
                    doc = json.loads(proc.stdout.strip().splitlines()[-1])
                    print(f"{name:9} {json.dumps(doc)}", flush=True)
                    results.setdefault(name, []).append(doc)
        finally:
            cluster.stop()
    summary = {
        name: {
            key: statistics.median(float(d[key]) for d in docs)  # type: ignore[arg-type]
            for key in ("session_s", "sweep_s", "runs_per_s", "check_warm_s", "events_per_s_warm")
        }
        for name, docs in results.items()
    }
    print(json.dumps({"medians": summary}, indent=2))


if __name__ == "__main__":
    main()
