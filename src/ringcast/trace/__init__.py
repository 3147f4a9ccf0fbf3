"""The trace format: one Arrow schema for simulated and real runs, its writers and reader.

Parquet on disk, JSON Lines for humans; see ``docs/trace-schema.md``.
"""

from ringcast.trace.reader import read_trace, trace_protocol
from ringcast.trace.rows import RECORD_COLUMNS, encode_detail, host_detail, make_row
from ringcast.trace.schema import COLUMNS, NON_NULL, PROTOCOL_KEY, REQUIRED, SCHEMA, Row
from ringcast.trace.validate import TraceSchemaError, validate_table
from ringcast.trace.writer import (
    JsonlTraceWriter,
    ParquetTraceWriter,
    TraceWriter,
    open_writer,
)

__all__ = [
    "COLUMNS",
    "NON_NULL",
    "PROTOCOL_KEY",
    "RECORD_COLUMNS",
    "REQUIRED",
    "SCHEMA",
    "JsonlTraceWriter",
    "ParquetTraceWriter",
    "Row",
    "TraceSchemaError",
    "TraceWriter",
    "encode_detail",
    "host_detail",
    "make_row",
    "open_writer",
    "read_trace",
    "trace_protocol",
    "validate_table",
]
