"""A digest of every bundled scenario's simulated trace, to show that a change keeps
behaviour byte for byte.

Runs each ``scenarios/**/*.toml`` in the simulator at one seed and prints the SHA-256 of
its trace rows (every column, in the order recorded) and one digest over all of them.
Run it on two versions of the source and compare the output::

    python bench/trace_digests.py --seed 1 > after.txt
    mkdir OLD && git archive main src | tar -x -C OLD      # the code to compare with
    PYTHONPATH=OLD/src python bench/trace_digests.py --seed 1 > before.txt
    diff before.txt after.txt

Usage: python bench/trace_digests.py [--seed N] [--jobs J] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def digest(path: str, seed: int) -> tuple[str, str, int]:
    """The SHA-256 of one scenario's trace rows at ``seed``, and the number of rows."""
    from ringcast.sim import Simulation, load_scenario

    result = Simulation(load_scenario(path), seed=seed).run()
    h = hashlib.sha256()
    rows = result.recorder.rows
    for row in rows:
        h.update(repr(tuple(row)).encode())
        h.update(b"\n")
    return path, h.hexdigest(), len(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", help="scenario files (default: every bundled one)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    args = ap.parse_args(argv)
    paths = args.scenarios or sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.toml")
    )
    paths = [str(ROOT / p) if not Path(p).is_absolute() else p for p in paths]
    total = hashlib.sha256()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, hexdigest, n in pool.map(digest, paths, [args.seed] * len(paths)):
            name = str(Path(path).relative_to(ROOT)) if path.startswith(str(ROOT)) else path
            print(f"{hexdigest}  {n:>8}  {name}", flush=True)
            total.update(hexdigest.encode())
    print(f"{total.hexdigest()}  all {len(paths)} scenarios, seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
