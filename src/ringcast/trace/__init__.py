"""The trace format: one Arrow schema for simulated and real runs, its writers and reader.

Parquet on disk, JSON Lines for humans; see ``docs/trace-schema.md``.
"""

from ringcast.trace.reader import read_trace, trace_protocol, trace_version
from ringcast.trace.rows import RECORD_COLUMNS, encode_detail, host_detail, make_row
from ringcast.trace.schema import (
    ADDED_COLUMNS,
    COLUMNS,
    NON_NULL,
    PROTOCOL_KEY,
    REQUIRED,
    SCHEMA,
    TRACE_VERSION,
    VERSION_KEY,
    Row,
)
from ringcast.trace.validate import TraceSchemaError, validate_table
from ringcast.trace.writer import (
    JsonlTraceWriter,
    ParquetTraceWriter,
    TraceWriter,
    open_writer,
)

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "NON_NULL",
    "PROTOCOL_KEY",
    "RECORD_COLUMNS",
    "REQUIRED",
    "SCHEMA",
    "TRACE_VERSION",
    "VERSION_KEY",
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
    "trace_version",
    "validate_table",
]
