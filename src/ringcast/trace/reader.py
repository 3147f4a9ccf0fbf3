"""Reading traces: a Parquet file, a JSON Lines file, or a directory of them.

Whatever the input, the result is one Arrow table with exactly the columns, order
and types of :data:`~ringcast.trace.schema.SCHEMA` (plus, on request, the hive
partition columns of a directory), validated by
:func:`~ringcast.trace.validate.validate_table`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ringcast.trace.conform import conform_table
from ringcast.trace.jsonl import parse_jsonl
from ringcast.trace.messages import first_line
from ringcast.trace.partitions import partition_values
from ringcast.trace.schema import COLUMNS, PROTOCOL_KEY, SCHEMA, VERSION_KEY
from ringcast.trace.validate import TraceSchemaError, validate_table

__all__ = [
    "SUFFIXES",
    "find_trace_files",
    "read_trace",
    "schema_protocol",
    "schema_version",
    "trace_protocol",
    "trace_version",
]

SUFFIXES: tuple[str, ...] = (".parquet", ".jsonl")
"""File name endings :func:`read_trace` reads (case-insensitive)."""

_READ_ERRORS = (pa.ArrowException, OSError, ValueError, EOFError, IndexError)


def read_trace(
    path: str | Path, *, keep_partitions: bool = False, check_order: bool = False
) -> pa.Table:
    """Read the trace at ``path`` into a validated table of :data:`SCHEMA`.

    ``path`` is a ``.parquet`` file, a ``.jsonl`` file, or a directory, in which every
    ``*.parquet`` and ``*.jsonl`` file at any depth is read, in order of relative path,
    skipping files and directories whose names start with ``.`` or ``_`` (Spark's
    ``_SUCCESS``, ``_temporary``, ``.crc`` files). Compatible types are cast (e.g. an
    ``int32`` ``t`` to ``int64``), columns not in the schema are dropped, and a value
    missing from a JSON Lines row is null. A trace of an earlier format version reads
    with the columns added since null (``network`` in a version 1 trace).

    Hive partition directories (``protocol=totem/scenario=s1/part-0.parquet``): a
    partition whose key is a schema column fills that column when the file lacks it
    (Spark moves ``partitionBy`` columns out of the files). Other partition keys are
    dropped, unless ``keep_partitions=True``: then each becomes an extra ``string``
    column after the schema's columns, in order of first appearance, null for files
    outside that partition.

    ``check_order=True`` also checks that ``i`` strictly increases per run and node.

    Raises :class:`TraceSchemaError` naming the file for a missing path, an
    unsupported file type, an empty directory, an unreadable or malformed file, or a
    file that does not conform to the schema.
    """
    root = Path(path)
    source = str(path)
    if root.is_dir():
        table = _read_directory(root, source, keep_partitions)
    elif root.is_file():
        table = _read_file(root, source, {})
    elif root.exists():
        raise TraceSchemaError(f"{source}: not a regular file or directory")
    else:
        raise TraceSchemaError(f"{source}: no such file or directory")
    validate_table(table, source, check_order=check_order)
    return table


def trace_protocol(path: str | Path) -> str | None:
    """The protocol a Parquet trace file names in its metadata
    (:data:`~ringcast.trace.schema.PROTOCOL_KEY`), or None: a file written before the
    key existed, by another writer, or a JSON Lines file. Reads the footer only.

    Raises :class:`TraceSchemaError` naming the file when it is not readable Parquet.
    """
    schema = _footer_schema(path)
    return None if schema is None else schema_protocol(schema)


def _footer_schema(path: str | Path) -> pa.Schema | None:
    """The schema in a Parquet file's footer (None for a file that is not Parquet by
    its suffix); :class:`TraceSchemaError` naming the file when it cannot be read."""
    file = Path(path)
    if file.suffix.lower() != ".parquet":
        return None
    try:
        return pq.read_schema(file)
    except _READ_ERRORS as exc:
        raise TraceSchemaError(f"{path}: not a readable Parquet file ({first_line(exc)})") from None


def schema_protocol(schema: pa.Schema) -> str | None:
    """The protocol named in ``schema``'s metadata (a Parquet trace file's), or None."""
    raw = (schema.metadata or {}).get(PROTOCOL_KEY.encode())
    if not raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def trace_version(path: str | Path) -> int | None:
    """The format version a Parquet trace file gives in its metadata
    (:data:`~ringcast.trace.schema.VERSION_KEY`), or None: a file of version 1 (written
    before the key existed), one written by another writer (Spark's sweep output), or a
    JSON Lines file. Reads the footer only; the reader itself goes by the columns a
    file holds, not by this number.

    Raises :class:`TraceSchemaError` naming the file when it is not readable Parquet.
    """
    schema = _footer_schema(path)
    return None if schema is None else schema_version(schema)


def schema_version(schema: pa.Schema) -> int | None:
    """The format version named in ``schema``'s metadata (a Parquet trace file's), or None."""
    raw = (schema.metadata or {}).get(VERSION_KEY.encode())
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


def find_trace_files(root: Path) -> list[Path]:
    """The trace files under directory ``root``, sorted by relative path.

    See :func:`read_trace` for which files count.
    """
    found = []
    for candidate in root.rglob("*"):
        relative = candidate.relative_to(root)
        if any(part.startswith((".", "_")) for part in relative.parts):
            continue
        if candidate.suffix.lower() in SUFFIXES and candidate.is_file():
            found.append(relative)
    return [root / relative for relative in sorted(found, key=lambda p: p.as_posix())]


def _read_directory(root: Path, source: str, keep_partitions: bool) -> pa.Table:
    files = find_trace_files(root)
    if not files:
        raise TraceSchemaError(f"{source}: directory holds no .parquet or .jsonl files")
    tables: list[pa.Table] = []
    partitions: list[dict[str, str | None]] = []
    for file in files:
        values = partition_values(file.relative_to(root))
        tables.append(_read_file(file, str(file), values))
        partitions.append({k: v for k, v in values.items() if k not in COLUMNS})
    if keep_partitions:
        keys = list(dict.fromkeys(key for values in partitions for key in values))
        tables = [
            _with_partitions(table, values, keys)
            for table, values in zip(tables, partitions, strict=True)
        ]
    return pa.concat_tables(tables)


def _read_file(path: Path, source: str, partitions: Mapping[str, str | None]) -> pa.Table:
    suffix = path.suffix.lower()
    column_values = {k: v for k, v in partitions.items() if k in COLUMNS}
    if suffix == ".jsonl":
        raw = parse_jsonl(path, source, column_values)
    elif suffix == ".parquet":
        raw = _fill_columns(_read_parquet(path, source), column_values, source)
    else:
        raise TraceSchemaError(
            f"{source}: unsupported trace file type {path.suffix!r}, "
            f"expected one of {', '.join(SUFFIXES)}"
        )
    table = conform_table(raw, source)
    validate_table(table, source)
    return table


def _read_parquet(path: Path, source: str) -> pa.Table:
    try:
        parquet = pq.ParquetFile(path)
    except _READ_ERRORS as exc:
        raise TraceSchemaError(
            f"{source}: not a readable Parquet file ({first_line(exc)})"
        ) from None
    try:
        names = parquet.schema_arrow.names
        wanted = [name for name in dict.fromkeys(names) if name in COLUMNS]
        table = parquet.read(columns=wanted)
    except _READ_ERRORS as exc:
        raise TraceSchemaError(
            f"{source}: not a readable Parquet file ({first_line(exc)})"
        ) from None
    finally:
        parquet.close()
    return table


def _fill_columns(table: pa.Table, values: Mapping[str, str | None], source: str) -> pa.Table:
    """Add the schema columns ``values`` gives (partition values) that ``table`` lacks."""
    for name, value in values.items():
        if name in table.column_names:
            continue
        dtype = SCHEMA.field(name).type
        try:
            scalar = pa.scalar(value, pa.string()).cast(dtype)
        except _READ_ERRORS as exc:
            raise TraceSchemaError(
                f"{source}: partition value {name}={value!r} is not a {dtype} ({first_line(exc)})"
            ) from None
        table = table.append_column(pa.field(name, dtype), pa.repeat(scalar, table.num_rows))
    return table


def _with_partitions(
    table: pa.Table, values: Mapping[str, str | None], keys: list[str]
) -> pa.Table:
    for key in keys:
        scalar = pa.scalar(values.get(key), pa.string())
        table = table.append_column(pa.field(key, pa.string()), pa.repeat(scalar, table.num_rows))
    return table
