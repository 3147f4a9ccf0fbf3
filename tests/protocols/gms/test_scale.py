"""GMS in a group of 32: the heartbeat detector's misses grow with the group
(``heartbeat_misses_per_doubling``; docs/protocols/gms.md, "Failure detection that scales
with the group"), so loss alone does not exclude a live member, and a crash is still
excluded within the documented bound."""

from __future__ import annotations

from typing import Any

from tests.protocols.groups import lossy_group

from ringcast.core.units import MS
from ringcast.sim import SimResult

NODES = [f"N{k:02}" for k in range(32)]


def _run(loss: float, duration: str, nemesis: list[dict[str, Any]]) -> SimResult:
    return lossy_group("gms", NODES, loss, duration, nemesis=nemesis)


def test_thirty_percent_loss_excludes_no_live_member_of_32() -> None:
    """No fault: with 4 misses whatever the size, N11 suspected its live successor at
    4.4 s and N26 its own at 4.6 s (seed 1), and the members installed 84 views (the
    exclusions and the merges); with 6 at 32 members, nobody is suspected and the first
    view stays."""
    res = _run(0.3, "5s", [])
    assert res.events("suspect") == []
    assert [v for v in res.events("view") if v["t"] > 0] == []


def test_a_crash_among_32_is_excluded_within_seven_heartbeats_and_a_view() -> None:
    """6 misses in force at 32 members: the crashed member's predecessor probes it once
    it has been silent 300 ms (its last heartbeat 27 ms before the crash) and suspects
    it when the probe is unanswered for ``suspect_verify_timeout`` (150 ms), within
    (6 + 1) x 50 + 150 ms of the crash, and the coordinator's two phases install the
    view without it a few ms later (476-478 ms after the crash; 326-328 without the
    probe, 226-228 with 4 misses)."""
    crash = 1027 * MS
    res = _run(0.0, "2s", [{"at": "1027ms", "action": "crash", "node": "N31"}])
    assert [(r["node"], r["detail"]["node"]) for r in res.events("suspect")] == [("N30", "N31")]
    views = [v for v in res.events("view") if v["t"] > 0]
    assert {v["node"] for v in views} == set(NODES[:31])
    assert all(v["members"] == NODES[:31] for v in views)
    assert all(crash + 400 * MS < v["t"] <= crash + 500 * MS + 20 * MS for v in views)
