"""Collects trace rows column-wise while a simulation runs (see ``docs/trace-schema.md``)."""

from __future__ import annotations

import functools
from typing import Any

from ringcast.trace.rows import host_detail
from ringcast.trace.schema import COLUMNS


class Recorder:
    """Column lists for the trace schema, and a per-node event index ``i``."""

    __slots__ = ("_index", "cols", "run")

    def __init__(self, run: str):
        self.run = run
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.cols["t"])

    def add(
        self,
        node: str,
        t: int,
        kind: str,
        msg: str | None = None,
        order: str | None = None,
        view: str | None = None,
        members: list[str] | None = None,
        transitional: bool | None = None,
        size: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """A host-owned row (a fault, a drop, the closing stats); ``detail`` a dict."""
        self.add_row(
            node, t, kind, msg, order, view, members, transitional, size, host_detail(detail)
        )

    def add_row(
        self,
        node: str,
        t: int,
        kind: str,
        msg: str | None = None,
        order: str | None = None,
        view: str | None = None,
        members: list[str] | None = None,
        transitional: bool | None = None,
        size: int | None = None,
        detail: str | None = None,
    ) -> None:
        """One row of the trace schema; ``detail`` already JSON text (or None)."""
        i = self._index.get(node, 0)
        self._index[node] = i + 1
        c = self.cols
        c["run"].append(self.run)
        c["node"].append(node)
        c["t"].append(t)
        c["i"].append(i)
        c["kind"].append(kind)
        c["msg"].append(msg)
        c["order"].append(order)
        c["view"].append(view)
        c["members"].append(members)
        c["transitional"].append(transitional)
        c["size"].append(size)
        c["detail"].append(detail)

    def sink(self, node: str) -> NodeTrace:
        """The :class:`~ringcast.core.interpreter.TraceSink` of one node."""
        return NodeTrace(self, node)


class NodeTrace:
    """One node's rows of a :class:`Recorder` (the interpreter's trace sink):
    ``add(t, kind, msg, order, view, members, transitional, size, detail)``."""

    __slots__ = ("add", "node")

    def __init__(self, recorder: Recorder, node: str):
        self.node = node
        self.add = functools.partial(recorder.add_row, node)
