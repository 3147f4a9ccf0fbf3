"""The simulator's event rate on two versions of the source, side by side in one run.

For a change meant to keep behaviour (a refactoring): each repeat runs, in a fresh
process per version and interleaved so both see the same machine load, the full
simulation of ``bench/sim_events.py`` (``basic``, five nodes, with SimPy's model of the
same traffic as the yardstick) and one saturated scenario per family, and prints the
medians of simulated events per CPU second of the process (on a shared machine the wall
clock measures the neighbours)::

    mkdir OLD && git archive main src | tar -x -C OLD      # the code to compare with
    python bench/sim_versions.py --old OLD/src --repeat 5

With ``--paired`` each repeat runs the two processes at the same time instead (the
first to start alternating), and the last column is the median of the repeats' own
ratios: on a machine whose load comes and goes, both versions of a repeat then see the
same neighbours (and each other, evenly).

Usage: python bench/sim_versions.py --old DIR [--new DIR] [--repeat R] [--seconds S]
       [--paired]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = (
    "scenarios/raincore/saturated_crash.toml",
    "scenarios/totem/corosync_saturated_pauses.toml",
    "scenarios/tribes/saturated_crash.toml",
)

PROBE = """
import importlib.metadata as md, importlib.util, json, sys, time
time.perf_counter = time.process_time  # CPU seconds: the machine is shared
sys.path.insert(0, {bench!r})
_entry_points = md.entry_points
def entry_points(**kw):  # an older source tree lacks the families added since
    eps = _entry_points(**kw)
    if kw.get("group") != "ringcast.protocols":
        return eps
    return md.EntryPoints(e for e in eps if importlib.util.find_spec(e.module) is not None)
md.entry_points = entry_points
from sim_events import ringcast_full, simpy_full
from ringcast.sim import Simulation, load_scenario
rates = {{"basic (full simulation)": ringcast_full({seconds})}}
rates["SimPy (same traffic)"] = simpy_full({seconds})
for name, path in {scenarios!r}:
    try:
        res = Simulation(load_scenario(path), seed=1).run()
    except Exception as exc:  # a family or a key this version does not have
        print(name, "not run:", repr(exc)[:200], file=sys.stderr)
        continue
    rates[name] = res.summary["sim_events"] / res.summary["wall_s"]
print(json.dumps(rates))
"""


def probe(src: str, seconds: float) -> dict[str, float]:
    code = PROBE.format(
        bench=str(ROOT / "bench"),
        seconds=seconds,
        scenarios=tuple((s.split("/", 1)[1], str(ROOT / s)) for s in SCENARIOS),
    )
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    sys.stderr.write(proc.stderr)
    out = proc.stdout
    rates: dict[str, float] = json.loads(out.splitlines()[-1])
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the src directory of the version to compare")
    ap.add_argument("--new", default=str(ROOT / "src"), help="default: this checkout's src")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="simulated seconds, basic run")
    ap.add_argument(
        "--paired",
        action="store_true",
        help="run each repeat's two processes at the same time and print the median of "
        "the repeats' own ratios (on a busy machine both see the same neighbours)",
    )
    a = ap.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for k in range(a.repeat):
        if a.paired:
            order = ("old", "new") if k % 2 == 0 else ("new", "old")
            with ThreadPoolExecutor(2) as pool:
                futures = {v: pool.submit(probe, getattr(a, v), a.seconds) for v in order}
            for v, fut in futures.items():
                runs[v].append(fut.result())
        else:
            runs["old"].append(probe(a.old, a.seconds))
            runs["new"].append(probe(a.new, a.seconds))
    names = list(runs["new"][0])
    ratio = "new/old" if not a.paired else "paired"
    print(f"{'events per CPU second':<46} {'old':>10} {'new':>10} {ratio:>8}")
    for name in names:
        new = statistics.median(r[name] for r in runs["new"])
        if name not in runs["old"][0]:  # a scenario the older version could not run
            print(f"{name:<46} {'-':>10} {new:>10,.0f} {'-':>8}")
            continue
        old = statistics.median(r[name] for r in runs["old"])
        if a.paired:
            pairs = zip(runs["old"], runs["new"], strict=True)
            rel = statistics.median(n[name] / o[name] for o, n in pairs)
        else:
            rel = new / old
        print(f"{name:<46} {old:>10,.0f} {new:>10,.0f} {rel:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
