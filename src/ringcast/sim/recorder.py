"""Collects a simulation's trace rows while it runs (see ``docs/trace-schema.md``)."""

from __future__ import annotations

import itertools
from typing import Any

from ringcast.trace.rows import TraceSink, host_detail
from ringcast.trace.schema import COLUMNS


class Recorder:
    """The trace rows of one run, in event order: one :class:`~ringcast.trace.rows.
    TraceSink` a node (its own event index ``i``), all appending to :attr:`rows`."""

    __slots__ = ("_sinks", "rows", "run")

    def __init__(self, run: str):
        self.run = run
        self.rows: list[tuple[Any, ...]] = []
        self._sinks: dict[str, TraceSink] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def sink(self, node: str) -> TraceSink:
        """The trace sink of ``node`` (the interpreter's, and the host's own rows')."""
        sink = self._sinks.get(node)
        if sink is None:
            sink = TraceSink(self.run, node, self.rows, index=itertools.count().__next__)
            self._sinks[node] = sink
        return sink

    def add(
        self,
        node: str,
        t: int,
        kind: str,
        detail: dict[str, Any] | None = None,
        network: int | None = None,
    ) -> None:
        """A host-owned row (a fault, a packet's drop, the closing stats); ``detail`` a dict."""
        self.sink(node).add(t, kind, detail=host_detail(detail), network=network)

    @property
    def cols(self) -> dict[str, list[Any]]:
        """The rows column-wise: each column name of the schema to its list of values
        (a new dict and lists at each call)."""
        if not self.rows:
            return {c: [] for c in COLUMNS}
        columns = zip(*self.rows, strict=True)
        return {c: list(values) for c, values in zip(COLUMNS, columns, strict=True)}
