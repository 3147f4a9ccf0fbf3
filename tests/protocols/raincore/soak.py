"""Soak run of the randomized Raincore scenarios over seeds outside the suite's range.

Not collected by pytest (no ``test_`` prefix). Usage, from the repository root::

    python -m tests.protocols.raincore.soak --seeds 200-1200
    python tests/protocols/raincore/soak.py --seeds 718,984

Prints one line per failing seed (seed, property, first violation) and a summary; the
exit status is 1 when any seed failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "tests.protocols.raincore"

from ringcast.lab import reference as checks
from ringcast.sim import Simulation

from .. import soakrun
from .randomized import random_scenario


def problems(seed: int) -> dict[str, list[str]]:
    """The violations of one seed's run, by property (the suite's checks)."""
    sc, windows, live = random_scenario(seed)
    rows = Simulation(sc, seed=seed).run().events()
    found = {
        "invariant": checks.invariants(rows),
        "view_agreement": checks.view_agreement(rows),
        "single_token": checks.single_token(rows, sc.duration, windows),
        "mutual_exclusion": checks.mutual_exclusion(rows, sc.duration),
        "total_order": checks.total_order(rows),
        "convergence": checks.convergence(rows, live, on_members=True, keep_across_restart=True),
    }
    if not any(r["kind"] == "deliver" for r in rows):
        found["no_delivery"] = ["nothing was delivered"]
    return {k: v for k, v in found.items() if v}


if __name__ == "__main__":
    sys.exit(soakrun.main(problems, description=__doc__.splitlines()[0], default_seeds="200-1200"))
