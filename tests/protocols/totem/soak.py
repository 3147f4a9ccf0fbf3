"""Soak run of the randomized Totem scenarios over seeds outside the suite's range.

Not collected by pytest (no ``test_`` prefix). Usage, from the repository root::

    python -m tests.protocols.totem.soak --seeds 200-1000
    python tests/protocols/totem/soak.py --seeds 250,512

Prints one line per failing seed (seed, property, first violation) and a summary; the
exit status is 1 when any seed failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "tests.protocols.totem"

from . import checks
from .randomized import run


def parse_seeds(spec: str) -> list[int]:
    """``"200-1000"`` (end exclusive), ``"250,512"`` or a mix: ``"5,200-210"``."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi)))
        elif part:
            out.append(int(part))
    return out


def problems(seed: int) -> dict[str, list[str]]:
    """The violations of one seed's run, by property (the suite's checks)."""
    rows, alive, last = run(seed)
    found = {
        "integrity": checks.integrity(rows),
        "total_order": checks.total_order(rows),
        "fifo": checks.fifo(rows),
        "view_agreement": checks.view_agreement(rows),
        "virtual_synchrony": checks.virtual_synchrony(rows),
        "safe_delivery": checks.safe_delivery(rows),
        "convergence": checks.convergence(rows, alive, last),
    }
    if not any(r["kind"] == "deliver" for r in rows):
        found["no_delivery"] = ["nothing was delivered"]
    return {k: v for k, v in found.items() if v}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="200-1000", help="e.g. 200-1000 or 250,512")
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    failed: dict[int, dict[str, list[str]]] = {}
    start = time.monotonic()
    for k, seed in enumerate(seeds):
        if k and k % 50 == 0:
            print(f"... {k}/{len(seeds)} seeds, {len(failed)} failing", file=sys.stderr, flush=True)
        try:
            found = problems(seed)
        except Exception as exc:  # a crash of the run is a failure of the seed
            found = {"exception": [repr(exc)]}
        if found:
            failed[seed] = found
            for prop, lst in found.items():
                print(f"seed {seed}: {prop}: {lst[0]} ({len(lst)} in all)", flush=True)
    took = time.monotonic() - start
    print(f"{len(seeds)} seeds in {took:.0f}s, {len(failed)} failing: {sorted(failed)}")
    by_prop: dict[str, list[int]] = {}
    for seed, found in failed.items():
        for prop in found:
            by_prop.setdefault(prop, []).append(seed)
    for prop, lst in sorted(by_prop.items()):
        print(f"  {prop}: {lst}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
