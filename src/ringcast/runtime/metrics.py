"""A node's counters and the per-second rates derived from them (for /status and /metrics)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ringcast.runtime.security import DROP_REASONS

RATED = ("delivered", "submitted", "tokens", "packets_in", "packets_out")
HOST_DROPS = (*DROP_REASONS, "not_running")
"""Why the host drops a received datagram: the security layer's reasons, and a datagram
that arrives while the node is stopping (its sockets not yet closed)."""
SEND_DROPS = ("send_buffer_full", "send_refused", "unknown_destination")
"""Datagrams this node did not send (counted apart from received ones)."""


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
    handled: int = 0
    """Received datagrams handed to the protocol (``packets_in`` = ``handled`` + ``dropped``)."""
    handler_errors: int = 0
    drops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(HOST_DROPS, 0))
    """Received datagrams dropped by the host, by reason."""
    send_drops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SEND_DROPS, 0))
    protocol_drops: dict[str, int] = field(default_factory=dict)
    """The protocol's ``drop`` records by reason: handled datagrams it threw away (a frame
    meant for an earlier boot of this node, a stale token), and submits or timers."""
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
            "handled": self.handled,
            "handler_errors": self.handler_errors,
            "dropped": self.dropped,
            "drops": dict(self.drops),
            "send_drops": dict(self.send_drops),
            "protocol_drops": dict(self.protocol_drops),
            "rates": {k: round(v, 1) for k, v in self.rates.items()},
            "uptime_s": round(time.monotonic() - self.started, 3),
        }
