"""Hive-style partition directories (``protocol=totem/scenario=s1/part-0.parquet``)."""

from __future__ import annotations

from pathlib import PurePath
from urllib.parse import unquote

__all__ = ["HIVE_NULL", "partition_values"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value Spark and Hive write for a null partition value."""


def partition_values(relative: PurePath) -> dict[str, str | None]:
    """The ``key=value`` directories of ``relative`` (a file path inside a dataset), in order.

    Values are percent-decoded, as Spark escapes special characters;
    :data:`HIVE_NULL` becomes None. Directories without ``=`` are skipped; a key seen
    twice keeps its innermost value.
    """
    values: dict[str, str | None] = {}
    for part in relative.parts[:-1]:
        key, sep, value = part.partition("=")
        if not sep or not key:
            continue
        values[unquote(key)] = None if value == HIVE_NULL else unquote(value)
    return values
