"""The live nemesis's precision, and how many live runs an hour this machine sustains.

Runs bundled scenarios with ``ringcast live`` (``--real-latency``) one after another,
``--repeat`` times each, and reads each run's ``summary.json``:

- per fault kind, the lag from the time the scenario asks for a fault to the time it took
  effect (``took_effect_ns - asked_ns``: a signal sent, nftables rules in place in every
  namespace concerned, a gate opened), and for ``restart`` and ``join`` also to the new
  process's first trace row of its own (``first_row_ns``: its machine started);
  median, 99th percentile (nearest rank) and maximum over every fault of every run;
- per scenario, the driver's wall time a run (lab built, processes started and armed,
  the scenario's duration, the stop, the merge, the lab removed) and what that makes an
  hour; findings (nodes that died on their own), which must be 0.

    sudo python bench/live_nemesis.py [--repeat 3] [--scenario scenarios/x.toml ...]

Needs root, iproute2 and nftables. One JSON line a scenario, then one for the lags.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ringcast.live.driver import run_live
from ringcast.sim import load_scenario

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "scenarios/tribes/partition_heal.toml",
    "scenarios/raincore/restart.toml",
    "scenarios/totem/rrp_flapping.toml",
    "scenarios/gms/crash_restart.toml",
    "scenarios/basic/crash_restart.toml",
]


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scenario", action="append", default=None)
    args = ap.parse_args()
    lags: dict[str, list[float]] = {}
    for name in args.scenario or DEFAULT:
        sc = load_scenario(ROOT / name)
        walls = []
        findings = 0
        for k in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                run = run_live(sc, k + 1, Path(tmp) / "out", real_latency=True)
            s = run.summary
            walls.append(s["wall_s"])
            findings += len(s["findings"])
            for a in s["nemesis"]:
                lags.setdefault(a["action"], []).append(a["lag_ns"] / 1e6)
                if a.get("first_row_ns") is not None:
                    lags.setdefault(f"{a['action']} (first row)", []).append(
                        (a["first_row_ns"] - a["asked_ns"]) / 1e6
                    )
        wall = statistics.mean(walls)
        print(
            json.dumps(
                {
                    "scenario": name,
                    "nodes": len(sc.all_nodes),
                    "duration_s": sc.duration / 1e9,
                    "runs": args.repeat,
                    "wall_s_mean": round(wall, 2),
                    "runs_an_hour": round(3600 / wall),
                    "findings": findings,
                }
            ),
            flush=True,
        )
    print(
        json.dumps(
            {
                action: {
                    "n": len(xs),
                    "p50_ms": round(statistics.median(xs), 3),
                    "p99_ms": round(_pct(xs, 0.99), 3),
                    "max_ms": round(max(xs), 3),
                }
                for action, xs in sorted(lags.items())
            }
        )
    )


if __name__ == "__main__":
    main()
