"""Soak run of the randomized Totem scenarios over seeds outside the suite's range.

Not collected by pytest (no ``test_`` prefix). Usage, from the repository root::

    python -m tests.protocols.totem.soak --seeds 200-1000
    python tests/protocols/totem/soak.py --seeds 250,512

Prints one line per failing seed (seed, property, first violation) and a summary; the
exit status is 1 when any seed failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "tests.protocols.totem"

from ringcast.lab import reference as checks

from .. import soakrun
from .randomized import run


def problems(seed: int) -> dict[str, list[str]]:
    """The violations of one seed's run, by property (the suite's checks)."""
    rows, alive, _last = run(seed)
    found = {
        "integrity": checks.integrity(rows),
        "total_order": checks.total_order(rows),
        "fifo": checks.fifo(rows),
        "view_agreement": checks.view_agreement(rows),
        "virtual_synchrony": checks.virtual_synchrony(rows),
        "safe_delivery": checks.safe_delivery(rows),
        "convergence": checks.convergence(rows, alive, keep_across_restart=True),
    }
    if not any(r["kind"] == "deliver" for r in rows):
        found["no_delivery"] = ["nothing was delivered"]
    return {k: v for k, v in found.items() if v}


if __name__ == "__main__":
    sys.exit(soakrun.main(problems, description=__doc__.splitlines()[0], default_seeds="200-1000"))
