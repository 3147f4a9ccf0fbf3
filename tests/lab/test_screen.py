"""The screen (:mod:`ringcast.lab.checks.screen`): a run that holds is cleared, a run
that breaks a property is sent to that property's exact check, and checking with the
screen gives exactly the results of the exact checks alone.

The screen runs on one run's rows in plain Python, so most of this needs no Spark:
each corruption of the lab's catalogue (``lab_traces.MUTATIONS``) must be flagged for
the property it breaks, and the clean run for none. The whole check with and without
the screen is compared over the catalogue and over every bundled scenario by
``tests/lab/test_reference.py``."""

from __future__ import annotations

import copy
import json
from typing import Any

import pyarrow as pa
import pytest
from lab_traces import MUTATIONS, _row, clean_trace, renumber, to_table

from ringcast.lab.checks import screen

RUN_SCOPED = "certproto"  # not a registered protocol: total order over the whole run


class _Ctx:
    convergence_bound = 10.0
    progress_bound = 1_000_000_000


def _table(rows: list[dict[str, Any]], protocol: str) -> pa.Table:
    t = to_table(rows)
    return t.append_column("protocol", pa.array([protocol] * t.num_rows, pa.string()))


def _flags(rows: list[dict[str, Any]], protocol: str = "totem") -> set[str]:
    params = screen.params(_Ctx(), [protocol])  # type: ignore[arg-type]
    return set(screen.screen_run(_table(rows, protocol), params, tuple(screen.SCREENS)))


def test_a_clean_run_is_cleared_of_every_property() -> None:
    assert _flags(clean_trace("clean")) == set()
    assert _flags(clean_trace("clean"), RUN_SCOPED) == set()


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_corruption_is_flagged_for_the_property_it_breaks(name: str) -> None:
    fn, prop = MUTATIONS[name]
    rows, _what = fn(clean_trace(f"m:{name}"))
    assert prop in _flags(copy.deepcopy(rows)), (name, prop)


def test_a_run_it_cannot_read_goes_to_every_exact_check() -> None:
    rows = clean_trace("odd")
    twin = dict(next(r for r in rows if r["node"] == "A" and r["kind"] == "deliver"))
    twin["t"] += 1
    assert _flags([*rows, twin]) == set(screen.SCREENS)  # two rows of A with one i
    broken = [dict(r) for r in rows]
    fault = next(r for r in broken if r["kind"] == "fault")
    fault["detail"] = "{not json"
    assert _flags(broken) == set(screen.SCREENS)


def test_liveness_is_not_screened_without_the_nodes_states() -> None:
    """A trace of the runtime says no node's state in a stats row: its nodes' ends are
    judged from where their traces stop, which only the exact checks do."""
    rows = [r for r in clean_trace("live") if r["kind"] != "stats"]
    assert {"convergence", "delivery_progress"} <= _flags(rows)


def test_overlaps_of_different_nodes_only() -> None:
    """Hold intervals (node, scope, start, end): a node's own intervals may touch; two
    nodes' may not, however many intervals lie between them."""
    ok = [("A", "", 0, 10), ("A", "", 5, 20), ("B", "", 20, 30), ("C", "", 30, 31)]
    assert not screen._overlap(ok)
    assert screen._overlap([*ok, ("C", "", 29, 40)])
    # B's interval overlaps A's first one, whose end is not the latest end so far
    assert screen._overlap([("A", "", 0, 50), ("A", "", 1, 60), ("B", "", 55, 70)])
    assert screen._overlap([("A", "", 0, 10), ("B", "", 1, 5), ("A", "", 2, 20)])
    assert not screen._overlap([("A", "v1", 0, 10), ("B", "v2", 1, 5)])


def test_total_order_is_cleared_by_one_common_order_only() -> None:
    """A run in which no node delivered every message is cleared when one order of all
    its messages agrees with every node; a cycle (two nodes, two messages, two orders)
    is flagged."""
    rows = []
    for node, msgs in (("A", ["A:1", "A:2", "B:1"]), ("B", ["A:2", "B:1", "B:2"])):
        for k, m in enumerate(msgs):
            rows.append(_row("r", node, k, "deliver", msg=m, order="agreed"))
    rows += [_row("r", m.split(":")[0], 0, "submit", msg=m) for m in ("A:1", "A:2", "B:1", "B:2")]
    rows = renumber(rows)
    assert "total_order" not in _flags(rows)
    swapped = copy.deepcopy(rows)
    b = [r for r in swapped if r["node"] == "B" and r["kind"] == "deliver"]
    b[0]["msg"], b[1]["msg"] = b[1]["msg"], b[0]["msg"]
    assert "total_order" in _flags(swapped)


def test_recorded_timeouts_set_the_convergence_bound() -> None:
    """A slow convergence passes under a long recorded failure-detection timeout and is
    flagged under a short one."""
    rows = clean_trace("fd")
    assert "convergence" not in _flags(rows)
    for r in rows:
        if r["kind"] == "stats":
            detail = json.loads(r["detail"])
            r["detail"] = json.dumps({**detail, "detection_timeout": 1})
    assert "convergence" in _flags(rows)
