"""Durations: integer nanoseconds everywhere inside ringcast; strings like "10ms" outside."""

from __future__ import annotations

import re
from typing import Any

NS = 1
US = 1_000
MS = 1_000_000
S = 1_000_000_000

_UNITS = {"ns": NS, "us": US, "µs": US, "ms": MS, "s": S, "m": 60 * S, "min": 60 * S}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|min|m)\s*$")


def parse_duration(raw: Any, where: str = "duration") -> int:
    """Parse "250ms", "1.5s", "20us" or an integer count of nanoseconds into nanoseconds."""
    if isinstance(raw, bool):
        raise ValueError(f"{where}: expected a duration like '10ms', got {raw!r}")
    if isinstance(raw, int):
        if raw < 0:
            raise ValueError(f"{where}: duration {raw} is negative")
        return raw
    if isinstance(raw, str):
        m = _DURATION.match(raw)
        if m:
            return round(float(m.group(1)) * _UNITS[m.group(2)])
    raise ValueError(
        f"{where}: bad duration {raw!r} (use a number with a unit: ns, us, ms, s, min; e.g. '10ms')"
    )


def format_duration(ns: int) -> str:
    for unit, size in (("s", S), ("ms", MS), ("us", US)):
        if ns >= size:
            return f"{ns / size:g}{unit}"
    return f"{ns}ns"
