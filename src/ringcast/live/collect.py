"""One trace from a live run: the nodes' own segments and the nemesis's rows, merged.

Each node process writes its trace in segments (:mod:`ringcast.runtime.tracelog`), its
times already counted from the run's origin on the monotonic clock. The driver adds
the rows only it knows: the faults it applied (``fault``, at the time each took effect)
and how each node ended (``stats``). The merge orders a node's rows by time (a fault
before the node's own rows of the same instant, as the simulator records a fault before
its consequences), numbers them again from 0 (``i`` strictly increasing in
(``run``, ``node``)), and keeps one ``stats`` row a node, the last, with the ``state``
the simulator's has (``up``, ``crashed``, ``paused``, ``left``, ``absent``, ``died``)
and its counters under the simulator's names (``sent``, ``sent_bytes``, ``received``)
beside the runtime's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ringcast.trace.reader import find_trace_files, read_trace
from ringcast.trace.rows import encode_detail
from ringcast.trace.schema import COLUMNS, SCHEMA, Row
from ringcast.trace.writer import open_writer


@dataclass(frozen=True)
class DriverRow:
    """A row the driver adds: ``fallback`` rows (a ``restart`` or ``leave`` the node
    may have recorded itself) are kept only when the node's own trace lacks one at or
    after ``t``."""

    node: str
    t: int
    kind: str
    detail: dict[str, Any]
    fallback: bool = False


def _own_fault_after(node_faults: list[tuple[int, str]], action: str, t: int) -> bool:
    return any(a == action and ft >= t for ft, a in node_faults)


def merge(
    trace_dir: Path,
    run: str,
    rows: list[DriverRow],
    end_states: dict[str, str],
    end_ns: int,
) -> pa.Table:
    """The run's trace: the segments under ``trace_dir`` and the driver's ``rows``.

    A node's rows after ``end_ns`` are left out but its last ``stats``: they are the
    run being stopped, not the scenario (a reference system's member that leaves its
    group as it stops is seen leaving by the others before they stop too)."""
    files = find_trace_files(trace_dir) if trace_dir.is_dir() else []
    nodes_t = read_trace(trace_dir) if files else SCHEMA.empty_table()
    if len(nodes_t):
        nodes_t = nodes_t.set_column(
            COLUMNS.index("run"), SCHEMA.field("run"), pa.array([run] * len(nodes_t), pa.string())
        )
    is_stats = pc.equal(nodes_t["kind"], "stats")
    stats = nodes_t.filter(is_stats).to_pylist()
    nodes_t = nodes_t.filter(
        pc.and_(pc.invert(is_stats), pc.less_equal(nodes_t["t"], pa.scalar(end_ns, pa.int64())))
    )
    faults = nodes_t.filter(pc.equal(nodes_t["kind"], "fault")).to_pylist()
    own: dict[str, list[tuple[int, str]]] = {}
    for f in faults:
        action = json.loads(f["detail"] or "{}").get("action", "")
        own.setdefault(f["node"], []).append((f["t"], action))
    extra: list[Row] = []
    for r in rows:
        if r.fallback and _own_fault_after(own.get(r.node, []), r.detail["action"], r.t):
            continue
        extra.append(Row(run, r.node, r.t, 0, r.kind, detail=encode_detail(r.detail)))
    last_t: dict[str, int] = {}
    for n, t in zip(nodes_t["node"].to_pylist(), nodes_t["t"].to_pylist(), strict=True):
        last_t[n] = max(t, last_t.get(n, t))
    last_stats: dict[str, dict[str, Any]] = {}
    for s in sorted(stats, key=lambda s: (s["t"], s["i"])):
        last_stats[s["node"]] = json.loads(s["detail"] or "{}")
    stats_rows = []
    for n, state in end_states.items():
        d = dict(last_stats.get(n, {}))
        d.pop("rates", None)
        if "packets_out" in d:
            d.update(sent=d["packets_out"], sent_bytes=d["bytes_out"], received=d["packets_in"])
        d["state"] = state
        t = max(end_ns, last_t.get(n, end_ns))
        stats_rows.append(Row(run, n, t, 0, "stats", detail=encode_detail(d)))
    driver_t = pa.Table.from_pylist([r._asdict() for r in extra], schema=SCHEMA)
    end_t = pa.Table.from_pylist([r._asdict() for r in stats_rows], schema=SCHEMA)
    parts = [
        driver_t.append_column("rank", pa.array([0] * len(driver_t), pa.int8())),
        nodes_t.append_column("rank", pa.array([1] * len(nodes_t), pa.int8())),
        end_t.append_column("rank", pa.array([2] * len(end_t), pa.int8())),
    ]
    table = pa.concat_tables(parts).sort_by(
        [("node", "ascending"), ("rank", "ascending"), ("t", "ascending"), ("i", "ascending")]
    )
    # rank orders the stats rows last; everything else goes by time, faults first
    table = _by_time(table)
    return table.drop_columns(["rank"])


def _by_time(table: pa.Table) -> pa.Table:
    """Order each node's rows by (t, rank, i) with ``stats`` last, and renumber ``i``."""
    is_end = pc.equal(table["rank"], 2)
    key = pc.if_else(is_end, pa.scalar(2**62, pa.int64()), table["t"])
    table = table.append_column("key", key).sort_by(
        [("node", "ascending"), ("key", "ascending"), ("rank", "ascending"), ("i", "ascending")]
    )
    nodes = table["node"].to_pylist()
    index = []
    prev = None
    k = 0
    for n in nodes:
        k = k + 1 if n == prev else 0
        prev = n
        index.append(k)
    table = table.set_column(COLUMNS.index("i"), SCHEMA.field("i"), pa.array(index, pa.int64()))
    return table.drop_columns(["key"])


def write_trace(table: pa.Table, path: Path, protocol: str) -> None:
    with open_writer(path, "parquet", protocol=protocol) as w:
        for batch in table.to_batches():
            w.write_batch(batch)
