"""The merge of a live run's traces: the nodes' own rows and the driver's."""

from __future__ import annotations

import json
import random
from pathlib import Path

from ringcast.live.collect import DriverRow, merge
from ringcast.runtime.liverun import Planned, arrivals
from ringcast.trace import open_writer
from ringcast.trace.schema import Row
from ringcast.trace.validate import validate_table


def _segment(path: Path, rows: list[Row]) -> None:
    with open_writer(path, "jsonl") as w:
        w.write(rows)


def test_faults_go_before_the_nodes_rows_of_their_instant(tmp_path: Path) -> None:
    _segment(
        tmp_path / "A.1.jsonl",
        [
            Row("x", "A", 10, 5, "view", view="1", members=["A", "B"], transitional=False),
            Row("x", "A", 30, 6, "submit", msg="A:1", order="agreed", size=3),
        ],
    )
    _segment(
        tmp_path / "A.2.jsonl",
        [
            Row("x", "A", 50, 9, "fault", detail='{"action":"restart","boot":2}'),
            Row("x", "A", 50, 10, "state", detail='{"state":"up"}'),
            Row("x", "A", 90, 11, "stats", detail='{"packets_out":4,"bytes_out":9,"packets_in":2}'),
        ],
    )
    rows = [
        DriverRow("A", 30, "fault", {"action": "crash"}),
        DriverRow("A", 45, "fault", {"action": "restart"}, fallback=True),  # A wrote its own
        DriverRow("B", 20, "fault", {"action": "leave"}, fallback=True),  # B did not
    ]
    table = merge(tmp_path, "run:1", rows, {"A": "up", "B": "left"}, end_ns=100)
    validate_table(table)
    got = [(r["node"], r["t"], r["i"], r["kind"]) for r in table.to_pylist()]
    assert got == [
        ("A", 10, 0, "view"),
        ("A", 30, 1, "fault"),  # the crash before the node's own row of that instant
        ("A", 30, 2, "submit"),
        ("A", 50, 3, "fault"),  # A's own restart row; the driver's fallback dropped
        ("A", 50, 4, "state"),
        ("A", 100, 5, "stats"),
        ("B", 20, 0, "fault"),
        ("B", 100, 1, "stats"),
    ]
    assert set(table["run"].to_pylist()) == {"run:1"}
    stats = {r["node"]: json.loads(r["detail"]) for r in table.to_pylist() if r["kind"] == "stats"}
    assert stats["A"] == {
        "packets_out": 4,
        "bytes_out": 9,
        "packets_in": 2,
        "sent": 4,
        "sent_bytes": 9,
        "received": 2,
        "state": "up",
    }
    assert stats["B"] == {"state": "left"}


def test_a_workload_keeps_its_schedule_across_incarnations() -> None:
    p = Planned(rate=100.0, start_ns=50_000_000, duration_ns=1_000_000_000, arrivals="poisson")
    first = list(arrivals(p, "A", origin_ns=7))
    assert first == list(arrivals(p, "A", origin_ns=7))  # a restarted node: the same instants
    assert first != list(arrivals(p, "B", origin_ns=7))
    assert first[0] == 50_000_007 and all(t < 1_050_000_007 for t in first)
    assert 60 < len(first) < 140
    steady = list(arrivals(Planned(rate=10.0, count=4), "A", origin_ns=0))
    assert steady == [0, 100_000_000, 200_000_000, 300_000_000]
    random.seed(0)  # arrivals draw from their own generator, not the module's
    assert list(arrivals(p, "A", origin_ns=7)) == first
