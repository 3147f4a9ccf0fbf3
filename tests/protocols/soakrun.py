"""The shared driver of the protocols' soak scripts (``tests/protocols/*/soak.py``).

A soak script runs a protocol's randomized scenarios over seeds outside the test
suite's range; it supplies ``problems(seed) -> {property: [violations]}`` and calls
:func:`main`. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable


def parse_seeds(spec: str) -> list[int]:
    """``"200-1200"`` (end exclusive), ``"718,984"`` or a mix: ``"5,200-210"``."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi)))
        elif part:
            out.append(int(part))
    return out


def main(
    problems: Callable[[int], dict[str, list[str]]],
    *,
    description: str,
    default_seeds: str,
    argv: list[str] | None = None,
) -> int:
    """Run ``problems`` over the seeds; print failing seeds; exit status 1 if any failed."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--seeds", default=default_seeds, help=f"e.g. {default_seeds} or 7,42")
    seeds = parse_seeds(ap.parse_args(argv).seeds)
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
