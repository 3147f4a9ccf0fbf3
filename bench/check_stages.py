"""Where a check's fixed cost goes: the Spark jobs, stages and tasks of one check of
every property, and the wall time of each property checked alone, on the same traces.

    python bench/check_stages.py [PATH ...] [--protocol NAME] [--master local[2]] [--repeat 2]
                                 [--plain] [--catalogue]

PATH: trace files or sweep outputs (default: five bundled scenarios simulated at seed 1
into a temporary directory); ``--protocol`` names the protocol of traces that do not
name it (a real cluster's JSON Lines segments). Each check is timed warm (after one check of every
property), in one SparkSession; the counts come from Spark's status tracker (the jobs
that started during the check) and count every stage a job lists, skipped or not.
``--plain`` checks every run through every property's exact check (no screen, no
certificate: ``run_checks(certify=False)``), the fixed cost of the exact checks
themselves. ``--catalogue`` checks the tests' corruption catalogue instead
(``tests/lab/lab_traces.py``: a clean synthetic Totem run and one run per corruption,
each breaking one property, every property claimed): every property's exact check has
a run to decide and counterexamples to collect.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIOS = (
    "scenarios/raincore/crash.toml",
    "scenarios/totem/partition_merge.toml",
    "scenarios/gms/partition_merge.toml",
    "scenarios/tribes/crash.toml",
    "scenarios/basic/crash_restart.toml",
)


def simulate(out: Path) -> list[str]:
    from ringcast.sim import Simulation, load_scenario

    root = Path(__file__).resolve().parents[1]
    paths = []
    for k, name in enumerate(SCENARIOS):
        result = Simulation(load_scenario(root / name), seed=1).run()
        result.write(out / f"{k:02d}")
        paths.append(str(out / f"{k:02d}"))
    return paths


def catalogue(out: Path) -> list[str]:
    """The tests' corruption catalogue as one trace file (protocol totem)."""
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "lab"))
    from lab_traces import MUTATIONS, clean_trace, to_table

    rows = clean_trace("clean")
    for name, (corrupt, _) in MUTATIONS.items():
        rows += corrupt(clean_trace(f"m:{name}"))[0]
    path = out / "catalogue.parquet"
    pq.write_table(to_table(rows), path)
    return [str(path)]


def counted(
    spark: Any,
    paths: list[str],
    properties: list[str] | None,
    protocol: str | None = None,
    certify: bool = True,
    overrides: dict[str, Any] | None = None,
) -> tuple[float, int, int, int]:
    """Wall seconds, jobs, stages and tasks of one check (the jobs that were not there
    before it: the check's threads set no job group, so none is used to find them)."""
    from ringcast.lab.pipeline import check_paths

    st = spark.sparkContext.statusTracker()
    before = set(st.getJobIdsForGroup())
    t0 = time.perf_counter()
    check_paths(
        spark,
        paths,
        properties=properties,
        protocol=protocol,
        certify=certify,
        overrides=overrides,
    )
    wall = time.perf_counter() - t0
    jobs = [st.getJobInfo(j) for j in set(st.getJobIdsForGroup()) - before]
    stages = [s for j in jobs if j for s in j.stageIds]
    tasks = sum(si.numTasks for s in stages if (si := st.getStageInfo(s)))
    return wall, len(jobs), len(stages), tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--protocol", default=None)
    ap.add_argument("--plain", action="store_true", help="no screen and no certificate")
    ap.add_argument("--catalogue", action="store_true", help="the tests' corruption catalogue")
    args = ap.parse_args()
    from ringcast.lab.properties import PROPERTIES
    from ringcast.lab.session import spark_session

    protocol = "totem" if args.catalogue else args.protocol
    options: dict[str, Any] = {"certify": not args.plain}
    if args.catalogue:
        options["overrides"] = {"totem": PROPERTIES}

    with tempfile.TemporaryDirectory() as tmp:
        paths = catalogue(Path(tmp)) if args.catalogue else args.paths or simulate(Path(tmp))
        spark = spark_session(master=args.master)
        print(f"traces: {', '.join(paths)}; master {args.master}", flush=True)
        counted(spark, paths, None, protocol, **options)  # warm the JVM
        print("properties | wall s | jobs | stages | tasks", flush=True)
        for _ in range(args.repeat):
            wall, jobs, stages, tasks = counted(spark, paths, None, protocol, **options)
            print(f"every property | {wall:.2f} | {jobs} | {stages} | {tasks}", flush=True)
        for name in PROPERTIES:
            wall, jobs, stages, tasks = counted(spark, paths, [name], protocol, **options)
            print(f"{name} | {wall:.2f} | {jobs} | {stages} | {tasks}", flush=True)
        spark.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
