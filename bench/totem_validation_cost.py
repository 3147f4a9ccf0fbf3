"""What Totem's packet validation costs the simulator, per event.

Totem validates every packet it receives before it acts on it (``protocols.totem._validate``:
the Totem paper's fields in range, ids well formed, no frame far ahead of the receiver),
the defence against a member whose packets pass authentication but carry hostile values.
This bench runs one saturated scenario with the checks as they are and with them replaced
by a stub that accepts everything, interleaved in fresh processes, and prints the medians
of simulated events per CPU second of the process (the machine is shared)::

    python bench/totem_validation_cost.py --repeat 5

Only a measurement: a run without the checks trusts every packet, which no node does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "totem" / "corosync_saturated_pauses.toml"

PROBE = """
import json, time
time.perf_counter = time.process_time  # CPU seconds: the machine is shared
from ringcast.sim import Simulation, load_scenario
import ringcast.protocols.totem._validate as checks
if {stub}:
    for name in ("source", "frame", "recovery_frame", "token"):
        setattr(checks, name, lambda *args, **kwargs: None)
res = Simulation(load_scenario({path!r}), seed=1).run()
print(json.dumps(res.summary["sim_events"] / res.summary["wall_s"]))
"""


def probe(stub: bool) -> float:
    code = PROBE.format(stub=stub, path=str(SCENARIO))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeat):
        for stub in (False, True):
            rates[stub].append(probe(stub))
    checked, trusting = statistics.median(rates[False]), statistics.median(rates[True])
    print(f"{SCENARIO.name}, events per CPU second (median of {args.repeat})")
    print(f"  with validation     {checked:>10,.0f}")
    print(f"  validation stubbed  {trusting:>10,.0f}")
    print(f"  validation's share of the per-event cost: {1 - checked / trusting:.1%}")


if __name__ == "__main__":
    main()
