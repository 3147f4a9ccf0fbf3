"""The runtime's trace log: write-through (one JSON Lines file a boot, rows handed to the
kernel as the host spills them) and the monotonic origin."""

from __future__ import annotations

import time
from pathlib import Path

from ringcast.runtime.storage import StateStore
from ringcast.runtime.tracelog import TraceLog
from ringcast.trace import read_trace


def _log(tmp_path: Path, **kw: object) -> TraceLog:
    store = StateStore(tmp_path / "state", fsync=False)
    return TraceLog(
        tmp_path / "trace",
        run="r",
        node="A",
        fmt="jsonl",
        store=store,
        boot=2,
        **kw,  # type: ignore[arg-type]
    )


def test_write_through_rows_are_in_the_file_once_spilled(tmp_path: Path) -> None:
    origin = time.monotonic_ns()
    log = _log(tmp_path, origin_ns=origin, origin_clock="monotonic", write_through=True)
    log.add(origin + 5, "submit", msg="A:1", order="agreed", size=3)
    log.add(origin + 9, "deliver", msg="A:1", order="agreed", size=3)
    log.spill()
    # not closed (as a process killed with kill -9 never closes it): the rows are there
    rows = read_trace(tmp_path / "trace" / "A.2.jsonl").to_pylist()
    assert [(r["t"], r["kind"]) for r in rows] == [(5, "submit"), (9, "deliver")]
    log.add(origin + 20, "view", view="1", members=["A"], transitional=False)
    log.cut()  # a rotation spills, into the same file
    log.close()
    assert [r["t"] for r in read_trace(tmp_path / "trace").to_pylist()] == [5, 9, 20]
    assert sorted(p.name for p in (tmp_path / "trace").iterdir()) == ["A.2.jsonl"]


def test_the_wall_clock_origin_is_unchanged(tmp_path: Path) -> None:
    log = _log(tmp_path, origin_ns=time.time_ns())
    log.add(time.monotonic_ns(), "submit", msg="A:1", order="agreed", size=3)
    log.close()
    (row,) = read_trace(tmp_path / "trace").to_pylist()
    assert 0 <= row["t"] < 10_000_000_000
