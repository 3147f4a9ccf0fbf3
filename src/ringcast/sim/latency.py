"""Latency distributions of a simulated link, in integer nanoseconds."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ringcast.core.units import parse_duration

DISTRIBUTIONS = ("constant", "uniform", "exponential", "normal")


@dataclass(frozen=True, slots=True)
class Latency:
    """``constant(value)``, ``uniform(low, high)``, ``exponential(mean, floor)``,
    ``normal(mean, stddev, floor)``; every sample is at least ``floor``."""

    dist: str = "constant"
    value: int = 0
    low: int = 0
    high: int = 0
    mean: int = 0
    stddev: int = 0
    floor: int = 0

    def sample(self, rng: random.Random) -> int:
        d = self.dist
        if d == "constant":
            return self.value
        if d == "uniform":
            return rng.randint(self.low, self.high)
        if d == "exponential":
            return max(self.floor, int(rng.expovariate(1.0 / self.mean)) if self.mean else 0)
        return max(self.floor, int(rng.gauss(self.mean, self.stddev)))


_KEYS = {
    "constant": {"value"},
    "uniform": {"low", "high"},
    "exponential": {"mean", "floor"},
    "normal": {"mean", "stddev", "floor"},
}


def parse_latency(raw: Any, where: str) -> Latency:
    """Build a :class:`Latency` from a scenario table, naming ``where`` in any error."""
    if isinstance(raw, str | int) and not isinstance(raw, bool):
        return Latency("constant", value=parse_duration(raw, where))
    if not isinstance(raw, dict):
        raise ValueError(f'{where}: expected a table like {{ dist = "constant", value = "1ms" }}')
    dist = raw.get("dist", "constant")
    if dist not in _KEYS:
        raise ValueError(
            f"{where}.dist: unknown distribution {dist!r} (use {', '.join(DISTRIBUTIONS)})"
        )
    allowed = _KEYS[dist]
    for key in raw:
        if key != "dist" and key not in allowed:
            raise ValueError(
                f"{where}.{key}: not a parameter of the {dist} distribution "
                f"(expected {', '.join(sorted(allowed))})"
            )
    vals = {k: parse_duration(raw[k], f"{where}.{k}") for k in allowed if k in raw}
    need = {
        "constant": {"value"},
        "uniform": {"low", "high"},
        "exponential": {"mean"},
        "normal": {"mean", "stddev"},
    }[dist]
    missing = need - vals.keys()
    if missing:
        raise ValueError(f"{where}: the {dist} distribution needs {', '.join(sorted(missing))}")
    lat = Latency(dist, **vals)
    if dist == "uniform" and lat.low > lat.high:
        raise ValueError(f"{where}: uniform low {lat.low}ns is above high {lat.high}ns")
    return lat
