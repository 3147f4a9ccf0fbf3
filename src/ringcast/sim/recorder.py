"""Collects trace rows column-wise while a simulation runs (see ``docs/trace-schema.md``)."""

from __future__ import annotations

from typing import Any

from ringcast.trace.rows import RECORD_COLUMNS, host_detail
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
        c["detail"].append(host_detail(detail))

    def add_record(self, node: str, t: int, kind: str, fields: dict[str, Any]) -> None:
        """A protocol's ``Record`` effect: known column names fill columns, the rest is detail."""
        cols = {k: fields[k] for k in RECORD_COLUMNS if k in fields}
        detail = {k: v for k, v in fields.items() if k not in cols}
        if "members" in cols and cols["members"] is not None:
            cols["members"] = list(cols["members"])
        if "view" in cols and cols["view"] is not None:
            cols["view"] = str(cols["view"])
        self.add(node, t, kind, detail=detail or None, **cols)
