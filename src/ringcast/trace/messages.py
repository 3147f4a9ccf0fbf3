"""Short, one-line renderings of exceptions and values for trace error messages."""

from __future__ import annotations

__all__ = ["first_line", "shorten"]


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its class name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
