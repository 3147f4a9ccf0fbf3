"""Structured logs: one JSON object a line on stderr, with the node id in every record."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

LOGGER = "ringcast.runtime"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def setup_logging(level: str = "info") -> None:
    """Send the runtime's logs to stderr as JSON lines (idempotent)."""
    root = logging.getLogger(LOGGER)
    root.setLevel(level.upper())
    if not any(getattr(h, "_ringcast", False) for h in root.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(JsonFormatter())
        h._ringcast = True  # type: ignore[attr-defined]
        root.addHandler(h)
        root.propagate = False


def node_logger(node_id: str) -> logging.LoggerAdapter[logging.Logger]:
    return _NodeAdapter(logging.getLogger(LOGGER), {"node": node_id})


class _NodeAdapter(logging.LoggerAdapter):  # type: ignore[type-arg]
    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        fields = {"node": self.extra["node"] if self.extra else None}
        fields.update(kwargs.pop("fields", {}) or {})
        kwargs["extra"] = {"fields": fields}
        return msg, kwargs


class RateLimit:
    """True at most once every ``interval`` seconds (for warnings about floods)."""

    def __init__(self, interval: float = 5.0):
        self.interval = interval
        self._last = -1e18

    def ready(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            return True
        return False
