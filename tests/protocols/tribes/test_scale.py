"""Tribes in a group of 32: ``member_drop_time`` grows by a beacon period each time the
group doubles beyond 8 (``drop_beacons_per_doubling``; docs/protocols/tribes.md, decision
19), so loss alone does not drop a live member, and a crash is still seen within the
documented bound."""

from __future__ import annotations

from typing import Any

from tests.protocols.groups import lossy_group

from ringcast.core.units import MS
from ringcast.sim import SimResult

NODES = [f"N{k:02}" for k in range(32)]


def _run(loss: float, duration: str, nemesis: list[dict[str, Any]]) -> SimResult:
    return lossy_group("tribes", NODES, loss, duration, nemesis=nemesis)


def test_twenty_percent_loss_drops_no_live_member_of_32() -> None:
    """No fault: with a drop time of 5 beacon periods whatever the size, 992 links at 20 %
    loss dropped a live member 24 times in 6 s (seed 1) and the members installed 64
    views; with 7 periods (350 ms) at 32 members, none, and one view each."""
    res = _run(0.2, "6s", [])
    gone = [r for r in res.events("coord") if r["detail"].get("op") == "memberDisappeared"]
    assert gone == []
    views = res.events("view")
    assert len(views) == len(NODES)
    assert {tuple(v["members"]) for v in views} == {tuple(NODES)}


def test_a_crash_among_32_is_suspected_within_eight_beacon_periods_then_dropped() -> None:
    """The drop time in force at 32 members is 250 + 2 x 50 = 350 ms: a member crashing
    27 ms after its beacon is suspected at every live member within 350 + 50 ms of the
    crash, and disappears when two probes have failed after that (each ``max_tries`` x
    ``rto`` = 100 ms); a view without it follows."""
    crash = 1027 * MS
    res = _run(0.0, "2s", [{"at": "1027ms", "action": "crash", "node": "N31"}])

    def at(op: str) -> dict[str, int]:
        return {
            r["node"]: r["t"]
            for r in res.events("coord")
            if r["detail"].get("op") == op and r["detail"].get("node") == "N31"
        }

    suspected, gone = at("suspect"), at("memberDisappeared")
    assert set(suspected) == set(gone) == set(NODES[:31])
    assert all(crash + 300 * MS < t <= crash + 400 * MS for t in suspected.values())
    assert all(gone[n] == suspected[n] + 200 * MS for n in gone)
    last = {v["node"]: v["members"] for v in res.events("view")}
    assert all(last[n] == NODES[:31] for n in NODES[:31])
