"""Sweep throughput: simulations per second against the number of Spark partitions.

    python bench/lab_sweep.py [--sweep sweeps/default.toml] [--seeds 2] [--partitions 1 2 4 8]

Runs the same sweep once per partition count (local[*]) into a temporary directory
and prints runs, partitions, seconds and runs per second.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ringcast.lab.grid import load_sweep
from ringcast.lab.session import spark_session
from ringcast.lab.sweep import run_sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", type=Path, default=Path("sweeps") / "default.toml")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--master", default=None)
    args = ap.parse_args()
    sweep = load_sweep(args.sweep, seeds=args.seeds)
    spark = spark_session(args.master)
    with tempfile.TemporaryDirectory() as tmp:
        for k, parts in enumerate(args.partitions):
            s = run_sweep(spark, sweep, Path(tmp) / f"out{k}", partitions=parts)
            print(
                f"{s['runs']:6} runs  {s['partitions']:3} partitions  {s['wall_s']:8.2f} s  "
                f"{s['runs_per_second']:8.2f} runs/s",
                flush=True,
            )
    spark.stop()


if __name__ == "__main__":
    main()
