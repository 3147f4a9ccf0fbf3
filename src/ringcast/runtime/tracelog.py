"""A node's runtime trace: rows of the trace schema, written in rotated segment files.

Rows are buffered in memory and cut into segments every ``rotate_ns`` of wall time
(or ``max_rows`` rows). A finished segment is written by a background thread through
:func:`ringcast.trace.open_writer` to a hidden temporary name, then renamed to
``<node>.<boot>.<segment>.<ext>``, so a reader never sees a half-written file and a
node killed with ``kill -9`` loses at most its current segment.

``t`` is the time of the row's event on the host's monotonic clock, moved onto wall-clock
nanoseconds since the run's origin (shared by every node of a
cluster started together), or, with an origin on the monotonic clock itself
(``origin_clock = "monotonic"``, the processes of one machine), simply the monotonic
nanoseconds since the origin; ``i`` comes from a :class:`~ringcast.runtime.storage.Reservation`
so it keeps increasing across restarts of the node.

*Write-through* (``trace_write_through = true``, what ``ringcast live`` uses): instead
of segments, one JSON Lines file a boot, ``<node>.<boot>.jsonl``, to which the host
hands each event's rows (one ``write`` system call) before the datagrams the event
sends leave (:meth:`TraceLog.spill`, called by the host while its transport is corked).
A node killed with ``kill -9`` then loses no row of anything its peers could have seen
(a message it submitted and sent is in its trace), as in the simulator; the rows reach
the kernel's page cache, not the disk (they survive the process, not the machine).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ringcast.runtime.storage import Reservation, StateStore
from ringcast.trace import open_writer
from ringcast.trace.rows import TraceSink, host_detail
from ringcast.trace.schema import COLUMNS

detail_json = host_detail  # one detail encoding for the simulator and the runtime


class TraceLog:
    """Collects one node's trace rows and writes them out in segments."""

    def __init__(
        self,
        directory: Path,
        *,
        run: str,
        node: str,
        fmt: str,
        origin_ns: int,
        store: StateStore,
        boot: int,
        rotate_ns: int = 5_000_000_000,
        max_rows: int = 200_000,
        protocol: str | None = None,
        origin_clock: str = "wall",
        write_through: bool = False,
    ):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.run = run
        self.node = node
        self.fmt = fmt
        self.protocol = protocol  # named in each Parquet segment's metadata
        self.origin = origin_ns
        self.rotate_ns = rotate_ns
        self.max_rows = max_rows
        self._boot = boot
        self._index = Reservation(store, "trace_index", block=1 << 20)
        self._segment = 0
        self._cut_at = time.monotonic_ns() + rotate_ns
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"trace-{node}")
        self._pending: list[Future[None]] = []
        self.rows_written = 0
        # A row's t is the host's time of its event (the loop's monotonic clock, read
        # once an event, before any of its effects is carried out, as the simulator's
        # virtual time), moved onto wall-clock time since the run's origin, which every
        # node of the cluster shares: the offset is read once, here.
        self.sink = TraceSink(
            run,
            node,
            index=self._index.take,
            shift=(
                -origin_ns
                if origin_clock == "monotonic"
                else time.time_ns() - origin_ns - time.monotonic_ns()
            ),
            limit=max_rows,
            on_full=self.cut,
        )
        """The node's trace sink (the interpreter's, and the host's own rows')."""
        self.add = self.sink.add
        self.write_through = write_through
        self._fd: int | None = None
        if write_through:
            self._fd = os.open(
                self.dir / f"{node}.{boot}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            self._encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

    def spill(self) -> None:
        """Write-through: hand the rows buffered so far to the kernel (one ``write``)."""
        rows = self.sink.rows
        if not rows or self._fd is None:
            return
        self.sink.rows = []
        encode = self._encode
        text = "".join(encode(dict(zip(COLUMNS, r, strict=True))) + "\n" for r in rows)
        data = text.encode()
        while data:
            data = data[os.write(self._fd, data) :]
        self.rows_written += len(rows)

    def tick(self) -> None:
        """Cut a segment when its time is up (called periodically by the host)."""
        if time.monotonic_ns() >= self._cut_at:
            self.cut()

    def cut(self) -> None:
        self._cut_at = time.monotonic_ns() + self.rotate_ns
        if self._fd is not None:
            self.spill()
            return
        sink = self.sink
        if not sink.rows:
            return
        rows, sink.rows = sink.rows, []
        self._segment += 1
        name = f"{self.node}.{self._boot}.{self._segment:05d}.{self.fmt}"
        self.rows_written += len(rows)
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(self._pool.submit(self._write, rows, name))

    def _write(self, rows: list[tuple[Any, ...]], name: str) -> None:
        tmp = self.dir / f".{name}.tmp"
        writer = open_writer(tmp, self.fmt, protocol=self.protocol)
        try:
            writer.write(rows)
        finally:
            writer.close()
        tmp.replace(self.dir / name)

    def close(self) -> None:
        """Write what is buffered and wait for every segment to be on disk."""
        self.cut()
        for f in self._pending:
            f.result()
        self._pool.shutdown(wait=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
