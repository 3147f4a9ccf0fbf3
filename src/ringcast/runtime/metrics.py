"""A node's counters and the per-second rates derived from them (for /status and /metrics)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ringcast.runtime.security import DROP_REASONS

RATED = ("delivered", "submitted", "tokens", "packets_in", "packets_out")


@dataclass
class Metrics:
    delivered: int = 0
    submitted: int = 0
    tokens: int = 0
    views: int = 0
    packets_in: int = 0
    packets_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    handler_errors: int = 0
    drops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    rates: dict[str, float] = field(default_factory=lambda: dict.fromkeys(RATED, 0.0))
    started: float = field(default_factory=time.monotonic)
    _last: tuple[float, dict[str, int]] | None = None

    def drop(self, reason: str) -> None:
        self.drops[reason] = self.drops.get(reason, 0) + 1

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())

    def sample(self) -> None:
        """Update ``rates`` from the counters' change since the previous sample."""
        now = time.monotonic()
        current = {k: getattr(self, k) for k in RATED}
        if self._last is not None:
            dt = now - self._last[0]
            if dt < 0.95:
                return  # rates over windows of about a second
            self.rates = {k: (current[k] - self._last[1][k]) / dt for k in RATED}
        self._last = (now, current)

    def as_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "submitted": self.submitted,
            "tokens": self.tokens,
            "views": self.views,
            "packets_in": self.packets_in,
            "packets_out": self.packets_out,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "handler_errors": self.handler_errors,
            "dropped": self.dropped,
            "drops": dict(self.drops),
            "rates": {k: round(v, 1) for k, v in self.rates.items()},
            "uptime_s": round(time.monotonic() - self.started, 3),
        }
