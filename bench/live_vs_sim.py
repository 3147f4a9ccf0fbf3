"""The simulator against real processes: the same scenario and seed run by ``ringcast
sim`` and by ``ringcast live --real-latency``, checked and measured by the lab.

For each scenario, one line of JSON: each property's verdict in both runs (``holds``,
``violated``, ``n/a``) and where they disagree; per fault kind the lab's convergence
time (from the fault to the last view installed before the next fault, median over the
run's faults of that kind) simulated and live, and the ratio; deliveries a second of
the run. A ratio beyond 2 (or under 1/2) is flagged ``"differs": true``.

    sudo python bench/live_vs_sim.py [--seed 1] [--scenario scenarios/x.toml ...]

Needs root, iproute2, nftables and Java (the lab's Spark).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

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


def _verdicts(doc: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, p in doc["properties"].items():
        out[name] = "n/a" if not p["runs_checked"] else p["status"]
    return out


def _convergence(doc: dict[str, Any]) -> dict[str, float | None]:
    return {c["action"]: c["p50_ms"] for c in doc["convergence"]}


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
                checks = {
                    k: _verdicts(check_paths(spark, [d]))
                    for k, d in (("sim", sim_dir), ("live", live_dir))
                }
                conv = {
                    k: _convergence(metrics_paths(spark, [d]))
                    for k, d in (("sim", sim_dir), ("live", live_dir))
                }
            seconds = sc.duration / 1e9
            faults = {}
            for action in sorted(set(conv["sim"]) | set(conv["live"])):
                s, v = conv["sim"].get(action), conv["live"].get(action)
                ratio = round(v / s, 2) if s and v else None
                faults[action] = {
                    "sim_ms": None if s is None else round(s, 1),
                    "live_ms": None if v is None else round(v, 1),
                    "ratio": ratio,
                    "differs": ratio is not None and not 0.5 <= ratio <= 2,
                }
            disagree = sorted(p for p in checks["sim"] if checks["sim"][p] != checks["live"][p])
            print(
                json.dumps(
                    {
                        "scenario": name,
                        "seed": args.seed,
                        "verdicts_disagree": {
                            p: {"sim": checks["sim"][p], "live": checks["live"][p]}
                            for p in disagree
                        },
                        "violated": {
                            k: sorted(p for p, s in v.items() if s == "violated")
                            for k, v in checks.items()
                        },
                        "convergence": faults,
                        "deliveries_per_s": {
                            "sim": round(sim.summary["deliveries"] / seconds),
                            "live": round(live["deliveries"] / seconds),
                        },
                        "live_findings": len(live["findings"]),
                    }
                ),
                flush=True,
            )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
