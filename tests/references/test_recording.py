"""How a reference recorder's events become trace rows (ringcast.references.recording),
without running any system: views as node sets, the leave and the clean stop, messages
numbered past a restarted member's earlier lives, and the live member's workload."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ringcast.references.corosync import CpgRecording
from ringcast.references.live import Workload, workload
from ringcast.references.recording import BOOT_BLOCK, Recording, arguments, record
from ringcast.runtime.liverun import Planned
from ringcast.trace import read_trace


class Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[int, str, tuple[Any, ...], dict[str, Any]]] = []

    def add(self, t: int, kind: str, *args: Any, **columns: Any) -> None:
        self.rows.append((t, kind, args, columns))

    def kinds(self) -> list[str]:
        return [k for _, k, _, _ in self.rows]


def _line(**ev: Any) -> str:
    return json.dumps(ev)


def test_a_view_is_a_set_of_nodes_with_the_unnamed_left_out() -> None:
    # JGroups: a restarted A joined before its earlier life was excluded; the new A
    # cannot name the old one (null), the others name both "A"
    rows = Rows()
    rec = Recording(rows.add, "fifo")
    rec.line(_line(k="view", t=5, view="u:5", members=["D", "B", None, "A"], coordinator="D"))
    other = Rows()
    Recording(other.add, "fifo").line(
        _line(k="view", t=6, view="u:5", members=["D", "B", "A", "A"], coordinator="D")
    )
    assert rows.rows[0][3]["members"] == ["D", "B", "A"] == other.rows[0][3]["members"]
    assert rows.kinds() == ["view", "leader"]
    # a coordinator it cannot name: the view without a leader row
    rows2 = Rows()
    Recording(rows2.add, "fifo").line(
        _line(k="view", t=7, view="u:6", members=[None, "B"], coordinator=None)
    )
    assert rows2.kinds() == ["view"] and rows2.rows[0][3]["members"] == ["B"]


def test_a_stop_is_a_clean_end_and_a_leave_is_a_leave_then_the_end() -> None:
    stop, leave, crash = Rows(), Rows(), Rows()
    Recording(stop.add, "fifo").line(_line(k="end", t=9, why="stopped"))
    left = Recording(leave.add, "fifo")
    left.leaving = True
    left.line(_line(k="end", t=9, why="stopped"))
    Recording(crash.add, "fifo").line(_line(k="end", t=9, why="corosync went away"))
    assert stop.kinds() == ["stats"]
    assert leave.kinds() == ["fault", "stats"]
    assert json.loads(leave.rows[0][3]["detail"]) == {"action": "leave"}
    assert crash.kinds() == ["fault"]
    assert json.loads(crash.rows[0][3]["detail"])["action"] == "crash"


def test_events_after_the_end_and_cut_lines_are_ignored() -> None:
    rows = Rows()
    rec = Recording(rows.add, "fifo")
    rec.line('{"k":"deliver","t":1,"msg":"A:1"')  # cut by a kill
    rec.line(_line(k="end", t=2, why="stopped"))
    rec.line(_line(k="view", t=3, view="v", members=["A"]))
    assert rows.kinds() == ["stats"]


def test_cpg_configurations_are_named_by_their_ring() -> None:
    rows = Rows()
    rec = CpgRecording(rows.add, {1: "n1", 2: "n2"})
    rec.line(_line(k="view", t=1, members=[2, 1]))
    rec.line(_line(k="ring", t=2, ring="1.9", members=[1, 2]))
    assert rows.rows[0][0] == 1 and rows.rows[0][3]["view"] == "1.9:1+2"
    assert rows.rows[0][3]["members"] == ["n2", "n1"]


FAKE = (
    "import json, sys, time\n"
    "first = int(sys.argv[-1])\n"
    "for k in range(first, first + 3):\n"
    "    print(json.dumps({'k': 'submit', 't': time.monotonic_ns(), 'msg': f'n1:{k}', "
    "'size': 64}))\n"
    "print(json.dumps({'k': 'end', 't': time.monotonic_ns(), 'why': 'stopped'}))\n"
)


def test_a_restarted_member_numbers_past_its_earlier_lives(tmp_path: Path) -> None:
    """Two lives of one member on one state directory, its recorder a stand-in that
    sends three messages from the number it is given and stops."""
    args = arguments("test").parse_args(
        [
            "--name",
            "n1",
            "--trace-dir",
            str(tmp_path / "trace"),
            "--state-dir",
            str(tmp_path / "state"),
            "--run",
            "r",
            "--origin-ns",
            "0",
            "--origin-clock",
            "monotonic",
            "--write-through",
        ]
    )
    for _ in range(2):
        assert record(args, "corosync", [sys.executable, "-c", FAKE], "agreed") == 0
    rows = read_trace(tmp_path / "trace").to_pylist()
    sent = [r["msg"] for r in rows if r["kind"] == "submit"]
    first = BOOT_BLOCK + 1
    assert sent == ["n1:1", "n1:2", "n1:3", f"n1:{first}", f"n1:{first + 1}", f"n1:{first + 2}"]
    assert [r["kind"] for r in rows].count("stats") == 2  # two clean stops, no leave


def test_the_member_sends_its_workloads_of_one_window_as_one_stream() -> None:
    plans = [
        Planned(
            kind="multicast",
            rate=100,
            size=100,
            order="agreed",
            start_ns=50,
            seed=1,
            duration_ns=2_000_000_000,
        ),
        Planned(
            kind="multicast",
            rate=50,
            size=200,
            order="safe",
            start_ns=50,
            seed=1,
            duration_ns=2_000_000_000,
        ),
    ]
    assert workload(plans, 1_000) == Workload(150, 200, 1_050, 2.0)
    saturating = [
        *plans,
        Planned(
            kind="multicast",
            rate=0,
            size=100,
            order="agreed",
            start_ns=50,
            seed=1,
            duration_ns=2_000_000_000,
        ),
    ]
    assert workload(saturating, 0).rate == 0
    assert workload([], 0) == Workload()
