"""Parsing a JSON Lines trace file into an Arrow table, with line-numbered errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ringcast.trace.arrowtypes import type_name
from ringcast.trace.messages import shorten
from ringcast.trace.rows import canonical_json
from ringcast.trace.schema import COLUMNS, NON_NULL, SCHEMA
from ringcast.trace.validate import TraceSchemaError

__all__ = ["parse_jsonl"]

_CONVERSION_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


def parse_jsonl(path: Path, source: str, defaults: Mapping[str, Any] | None = None) -> pa.Table:
    """Read the JSON Lines trace at ``path`` into a table of :data:`SCHEMA`.

    Each non-blank line must be a JSON object. A key missing from a line, or
    ``null``, makes that value null (so a nullable column may be left out of every
    line); a required column (``run``, ``node``, ``t``, ``i``, ``kind``) that no line
    has is reported as missing; keys that are not columns are ignored. A ``detail`` given as a JSON
    object (rather than a JSON string) is encoded canonically. Raises
    :class:`TraceSchemaError` naming ``source`` and the 1-based line number of the
    first bad line: not UTF-8, not JSON, not an object, a null required value, or a
    value of the wrong type.

    ``defaults`` gives a value to columns that a line lacks (a hive partition value
    for a column that was moved into the directory name).
    """
    defaults = defaults or {}
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceSchemaError(f"{source}: cannot read file: {exc.strerror or exc}") from None
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    seen: set[str] = set(defaults)
    line_numbers: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        obj = _parse_line(raw, source, number)
        seen.update(obj)
        line_numbers.append(number)
        for name, values in columns.items():
            values.append(obj.get(name, defaults.get(name)))
    missing = sorted(set(NON_NULL) - seen) if line_numbers else []
    if missing:
        raise TraceSchemaError(f"{source}: missing columns: {', '.join(missing)}")
    columns["detail"] = [_detail(value) for value in columns["detail"]]
    arrays = [_column(field, columns[field.name], line_numbers, source) for field in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _parse_line(raw: bytes, source: str, number: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceSchemaError(f"{source}: line {number}: not UTF-8 text") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceSchemaError(
            f"{source}: line {number}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(obj, dict):
        raise TraceSchemaError(
            f"{source}: line {number}: expected a JSON object, got {type(obj).__name__}"
        )
    return obj


def _detail(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return canonical_json(value)
    except ValueError:  # NaN or infinity: reported by the column's type check
        return value


def _column(field: pa.Field, values: list[Any], lines: list[int], source: str) -> pa.Array:
    if field.name in NON_NULL:
        for n, value in enumerate(values):
            if value is None:
                raise TraceSchemaError(
                    f"{source}: line {lines[n]}: column '{field.name}' is missing or null"
                )
    if pa.types.is_list(field.type):
        for n, value in enumerate(values):
            if value is not None and not isinstance(value, list):
                raise _wrong(field, value, lines[n], source)
    try:
        return pa.array(values, type=field.type)
    except _CONVERSION_ERRORS:
        pass
    for n, value in enumerate(values):
        try:
            pa.array([value], type=field.type)
        except _CONVERSION_ERRORS:
            raise _wrong(field, value, lines[n], source) from None
    raise TraceSchemaError(f"{source}: column '{field.name}' cannot be read as {field.type}")


def _wrong(field: pa.Field, value: Any, line: int, source: str) -> TraceSchemaError:
    text = shorten(json.dumps(value, ensure_ascii=False))
    return TraceSchemaError(
        f"{source}: line {line}: column '{field.name}' expects {type_name(field.type)}, got {text}"
    )
