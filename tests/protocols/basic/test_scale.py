"""basic in a group of 32: the heartbeat detector's misses grow with the group
(``heartbeat_misses_per_doubling``; the package docstring, "Failure detection in a large
group"), so loss alone rarely changes its view, and a crash is still seen within the
documented bound."""

from __future__ import annotations

from typing import Any

from tests.protocols.groups import lossy_group

from ringcast.core.units import MS

NODES = [f"N{k:02}" for k in range(32)]


def _run(loss: float, duration: str, nemesis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return lossy_group("basic", NODES, loss, duration, nemesis=nemesis).events("view")


def test_twenty_percent_loss_rarely_changes_the_view_of_32_members() -> None:
    """No fault: every view change is a false suspicion and the view that takes it back.
    With 4 misses whatever the size, 992 links at 20 % loss changed a view 278 times in
    6 s (seed 1); with 6 at 32 members, twice."""
    changes = [v for v in _run(0.2, "6s", []) if v["t"] > 0]
    assert len(changes) <= 20


def test_a_crash_among_32_leaves_every_view_within_seven_heartbeats() -> None:
    """6 misses in force at 32 members: a crash 27 ms after a heartbeat is probed by
    every live member once it has been silent 300 ms and suspected when the probe is
    unanswered for ``suspect_verify_timeout`` (150 ms), within (6 + 1) x 50 + 150 ms of
    the crash."""
    crash = 1027 * MS
    views = _run(0.0, "2s", [{"at": "1027ms", "action": "crash", "node": "N31"}])
    without = {}
    for v in views:
        if v["t"] > 0 and "N31" not in v["members"]:
            without.setdefault(v["node"], v["t"])
    assert set(without) == set(NODES[:31])
    assert all(crash + 400 * MS < t <= crash + 500 * MS for t in without.values())
