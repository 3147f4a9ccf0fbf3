"""The simulator against real processes: the same scenario and seed run by ``ringcast
sim`` and by ``ringcast live --real-latency``, checked and measured by the lab and
compared as the report's side by side does (:mod:`ringcast.lab.twins`).

For each scenario, one line of JSON: the pair (each property's verdict in both runs, the
times from a crash, a heal, a network down and a restart to their view, deliveries a
second, messages never delivered, each with its ratio live / simulated, and what
differs: a verdict, or a measure more than 2x apart) and the live run's findings.

    sudo python bench/live_vs_sim.py [--seed 1] [--scenario scenarios/x.toml ...]

Needs root, iproute2, nftables and Java (the lab's Spark).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ringcast.lab import twins
from ringcast.lab.pipeline import check_paths, metrics_paths
from ringcast.lab.session import spark_session
from ringcast.live.driver import run_live
from ringcast.sim import Simulation, load_scenario

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "scenarios/tribes/crash.toml",
    "scenarios/tribes/partition_heal.toml",
    "scenarios/raincore/crash.toml",
    "scenarios/totem/crash.toml",
    "scenarios/gms/crash_restart.toml",
    "scenarios/basic/crash_restart.toml",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenario", action="append", default=None)
    args = ap.parse_args()
    spark = spark_session("local[2]", shuffle_partitions=2, app_name="ringcast-live-vs-sim")
    try:
        for name in args.scenario or DEFAULT:
            sc = load_scenario(ROOT / name)
            with tempfile.TemporaryDirectory() as tmp:
                sim_dir, live_dir = Path(tmp) / "sim", Path(tmp) / "live"
                sim = Simulation(sc, args.seed).run()
                sim.write(sim_dir)
                live = run_live(sc, args.seed, live_dir, real_latency=True).summary
                sides = {
                    k: (check_paths(spark, [d]), metrics_paths(spark, [d]))
                    for k, d in ((twins.SIM, sim_dir), (twins.LIVE, live_dir))
                }
            (pair,) = twins.compare(sides)["pairs"]
            pair["live_findings"] = len(live["findings"])
            print(json.dumps(pair), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
