"""Trace writers: Parquet for runs, JSON Lines for humans; byte-identical for identical rows.

A writer accepts rows (:class:`~ringcast.trace.schema.Row` or plain 13-tuples), column
lists, or Arrow record batches, in any mix and any chunking. It cuts the stream into
groups of exactly ``batch_rows`` rows (the last one may be shorter) whatever the call
boundaries were, so the output depends only on the sequence of rows written.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self

import pyarrow as pa
import pyarrow.parquet as pq

from ringcast.trace.conform import conform_table
from ringcast.trace.convert import columns_to_table, rows_to_table
from ringcast.trace.schema import COLUMNS, PROTOCOL_KEY, SCHEMA, TRACE_VERSION, VERSION_KEY, Row
from ringcast.trace.validate import validate_table

__all__ = [
    "FORMATS",
    "PARQUET_COLUMN_ENCODING",
    "PARQUET_COMPRESSION",
    "PARQUET_COMPRESSION_LEVEL",
    "PARQUET_DICTIONARY_COLUMNS",
    "JsonlTraceWriter",
    "ParquetTraceWriter",
    "TraceWriter",
    "file_schema",
    "open_writer",
]

FORMATS: tuple[str, ...] = ("parquet", "jsonl")
"""The values :func:`open_writer` accepts for ``fmt``."""

PARQUET_COMPRESSION = "zstd"
"""Compression codec of every Parquet column chunk (read by Arrow, Spark, pandas, DuckDB)."""

PARQUET_COMPRESSION_LEVEL = 1
"""Fixed zstd level, so the compressed bytes do not depend on library defaults."""

PARQUET_DICTIONARY_COLUMNS: tuple[str, ...] = (
    "run",
    "node",
    "kind",
    "order",
    "view",
    "members",
    "transitional",
    "size",
    "network",
)
"""Columns with few distinct values, dictionary-encoded; ``msg`` and ``detail`` are plain."""

PARQUET_COLUMN_ENCODING: dict[str, str] = {"t": "DELTA_BINARY_PACKED", "i": "DELTA_BINARY_PACKED"}
"""The growing ``t`` and ``i`` are delta-encoded (about a third of the size of plain)."""


class TraceWriter(ABC):
    """Base of the trace writers: buffering, conversion and validation of the rows.

    Subclasses implement :meth:`_emit` (write one group of rows, a table of
    :data:`SCHEMA` in one chunk) and :meth:`_finish` (flush and close the file).
    Use as a context manager, or call :meth:`close`. Leaving the ``with`` block on an
    exception closes the file without writing the rows still buffered.
    """

    def __init__(self, source: str, batch_rows: int) -> None:
        """``source`` names the output in messages; ``batch_rows`` is the group size."""
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
        self._source = source
        self._batch_rows = batch_rows
        self._rows: list[Sequence[Any]] = []
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._room = batch_rows  # rows that fit in the current group (pending + buffered)
        self._converted = 0  # rows already turned into Arrow data
        self._closed = False

    @property
    def rows_written(self) -> int:
        """How many rows were given to this writer so far (buffered ones included)."""
        return self._converted + len(self._rows)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def write(self, rows: Iterable[Row | tuple[Any, ...]]) -> None:
        """Append ``rows``, each a :class:`Row` or a tuple of the 13 column values in order.

        A bad row raises :class:`~ringcast.trace.validate.TraceSchemaError` naming its
        index (counted from the first row given to this writer) when its group is
        converted, at the latest on :meth:`close`.
        """
        self._check_open()
        buffer = self._rows
        it = iter(rows)
        while True:
            buffer.extend(islice(it, self._room - len(buffer)))
            if len(buffer) < self._room:
                return
            self._convert_rows()

    def write_row(self, row: Row | tuple[Any, ...]) -> None:
        """Append one row (the cheapest call when rows come one at a time)."""
        self._check_open()
        self._rows.append(row)
        if len(self._rows) >= self._room:
            self._convert_rows()

    def write_columns(self, columns: Mapping[str, Sequence[Any]]) -> None:
        """Append rows given column-wise: every schema column name to its list of values
        (a column added after version 1, such as ``network``, may be left out: null)."""
        self._check_open()
        self._convert_rows()
        table = columns_to_table(columns, self._source, self._converted)
        self._converted += table.num_rows
        self._append(table)

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Append an Arrow record batch (or table) of the trace schema.

        Compatible types are cast and extra columns dropped (as :func:`read_trace`
        does); missing or mistyped columns and nulls in required columns raise
        :class:`~ringcast.trace.validate.TraceSchemaError`.
        """
        self._check_open()
        self._convert_rows()
        table = conform_table(batch, self._source)
        validate_table(table, self._source)
        self._converted += table.num_rows
        self._append(table)

    def close(self) -> None:
        """Write the buffered rows and close the file. Calling it again does nothing."""
        if self._closed:
            return
        try:
            self._convert_rows()
            if self._pending_rows:
                self._emit_pending()
        finally:
            self._closed = True
            self._finish()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        elif not self._closed:
            self._rows.clear()
            self._pending.clear()
            self._pending_rows = 0
            self._closed = True
            self._finish()

    @abstractmethod
    def _emit(self, table: pa.Table) -> None:
        """Write one group of rows: ``table`` has :data:`SCHEMA` and a single chunk."""

    @abstractmethod
    def _finish(self) -> None:
        """Flush and close the output."""

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self._source}: trace writer is closed")

    def _convert_rows(self) -> None:
        if not self._rows:
            return
        table = rows_to_table(self._rows, self._source, self._converted)
        self._converted += len(self._rows)
        self._rows.clear()
        self._append(table)

    def _append(self, table: pa.Table) -> None:
        while table.num_rows:
            part = table.slice(0, self._batch_rows - self._pending_rows)
            self._pending.append(part)
            self._pending_rows += part.num_rows
            table = table.slice(part.num_rows)
            if self._pending_rows == self._batch_rows:
                self._emit_pending()
        self._room = self._batch_rows - self._pending_rows

    def _emit_pending(self) -> None:
        # One contiguous chunk: the encoded bytes must not depend on how rows arrived.
        table = pa.concat_tables(self._pending).combine_chunks()
        self._pending.clear()
        self._pending_rows = 0
        self._room = self._batch_rows
        self._emit(table)


class ParquetTraceWriter(TraceWriter):
    """Writes a trace as one Parquet file, a row group every ``batch_rows`` rows.

    The file is deterministic: fixed settings (zstd level 1, dictionary encoding for
    :data:`PARQUET_DICTIONARY_COLUMNS`, delta encoding for ``t`` and ``i``, data page
    format 1.0, statistics on, no page index or checksums), no timestamps; the only
    metadata is the Arrow schema, the writing library's ``created_by`` string, the
    format version under :data:`~ringcast.trace.schema.VERSION_KEY` and, when
    ``protocol`` is given, the protocol's name under :data:`~ringcast.trace.schema.
    PROTOCOL_KEY` (so that the file says which protocol's claims it is checked for).
    The same rows and protocol give the same bytes with the same pyarrow version.
    """

    def __init__(
        self, path: str | Path, *, batch_rows: int = 65536, protocol: str | None = None
    ) -> None:
        super().__init__(str(path), batch_rows)
        self._writer = pq.ParquetWriter(
            str(path),
            file_schema(protocol),
            version="2.6",
            use_dictionary=list(PARQUET_DICTIONARY_COLUMNS),
            column_encoding=PARQUET_COLUMN_ENCODING,
            compression=PARQUET_COMPRESSION,
            compression_level=PARQUET_COMPRESSION_LEVEL,
            write_statistics=True,
            data_page_version="1.0",
            use_compliant_nested_type=True,
            store_schema=True,
            write_page_index=False,
            write_page_checksum=False,
        )

    def _emit(self, table: pa.Table) -> None:
        self._writer.write_table(table, row_group_size=self._batch_rows)

    def _finish(self) -> None:
        self._writer.close()


def file_schema(protocol: str | None) -> pa.Schema:
    """:data:`SCHEMA` with the key-value metadata of a trace file: the format version
    and, when given, the protocol's name."""
    metadata = {VERSION_KEY: str(TRACE_VERSION)}
    if protocol is not None:
        if not isinstance(protocol, str) or not protocol:
            raise ValueError(f"protocol must be a non-empty string, got {protocol!r}")
        metadata[PROTOCOL_KEY] = protocol
    return SCHEMA.with_metadata(metadata)


class JsonlTraceWriter(TraceWriter):
    """Writes a trace as JSON Lines: one object a row, UTF-8, ``\\n`` line ends.

    Every object has all 13 keys in column order (nulls as ``null``), compact
    separators ``,`` and ``:``, non-ASCII text as is; ``detail`` stays a JSON string,
    ``members`` is a JSON array. JSON Lines has no place for metadata, so a JSON Lines
    trace names no protocol (a ``summary.json`` beside it or the lab's ``--protocol``
    does).
    """

    def __init__(self, path: str | Path, *, batch_rows: int = 4096) -> None:
        super().__init__(str(path), batch_rows)
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by _finish

    def _emit(self, table: pa.Table) -> None:
        columns = [table.column(name).to_pylist() for name in COLUMNS]
        encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        lines = [
            encode(dict(zip(COLUMNS, values, strict=True))) for values in zip(*columns, strict=True)
        ]
        lines.append("")
        self._file.write("\n".join(lines).encode("utf-8"))

    def _finish(self) -> None:
        self._file.close()


def open_writer(path: str | Path, fmt: str, *, protocol: str | None = None) -> TraceWriter:
    """A writer for ``path`` in format ``fmt``: ``"parquet"`` or ``"jsonl"``. A Parquet
    file names ``protocol`` in its metadata (:data:`~ringcast.trace.schema.PROTOCOL_KEY`);
    JSON Lines cannot."""
    if fmt == "parquet":
        return ParquetTraceWriter(path, protocol=protocol)
    if fmt == "jsonl":
        return JsonlTraceWriter(path)
    raise ValueError(
        f"unknown trace format {fmt!r}: expected one of {', '.join(repr(f) for f in FORMATS)}"
    )
