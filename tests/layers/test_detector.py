"""The heartbeat failure detector on its own in the simulator."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import Effect, Record
from ringcast.core.events import Event, Suspected, Unsuspected
from ringcast.core.machine import MachineContext
from ringcast.layers import HeartbeatDetector, Stack
from ringcast.protocols.registry import ProtocolSpec, Setting, register
from ringcast.sim import Simulation, parse_scenario

MS = 1_000_000


class Watcher:
    def __init__(self, ctx: MachineContext):
        self.node_id = ctx.node_id

    def handle(self, event: Event, now: int) -> list[Effect]:
        if isinstance(event, Suspected):
            return [Record.of("suspect", peer=event.node)]
        if isinstance(event, Unsuspected):
            return [Record.of("unsuspect", peer=event.node)]
        return []


def _make(ctx: MachineContext) -> Stack:
    s = ctx.settings
    fd = HeartbeatDetector(ctx.node_id, ctx.members, interval=s["interval"], misses=s["misses"])
    return Stack(Watcher(ctx), detector=fd)


register(
    ProtocolSpec(
        "test_fd_watcher",
        _make,
        settings={"interval": Setting("duration", 10 * MS), "misses": Setting("int", 3)},
    )
)


def _run(nemesis: list[dict[str, Any]], joiners: list[str] | None = None) -> Any:
    doc = {
        "protocol": "test_fd_watcher",
        "nodes": ["A", "B", "C"],
        "joiners": joiners or [],
        "duration": "1s",
        "network": {"latency": "1ms"},
        "nemesis": nemesis,
    }
    return Simulation(parse_scenario(doc), 1).run()


def _times(res: Any, kind: str, peer: str) -> list[int]:
    return [e["t"] for e in res.events(kind) if e["detail"]["peer"] == peer]


def test_crash_is_suspected_within_misses_intervals_by_everyone() -> None:
    res = _run([{"at": "200ms", "action": "crash", "node": "C"}])
    for node in ("A", "B"):
        t = [e["t"] for e in res.events("suspect", node) if e["detail"]["peer"] == "C"]
        assert len(t) == 1
        # last heartbeat from C at <= 200ms; suspicion no later than 3 intervals + one tick after.
        assert 200 * MS < t[0] <= 200 * MS + 4 * 10 * MS
    assert not [e for e in res.events("suspect") if e["detail"]["peer"] != "C"]


def test_restart_unsuspects() -> None:
    res = _run(
        [
            {"at": "200ms", "action": "crash", "node": "C"},
            {"at": "500ms", "action": "restart", "node": "C"},
        ]
    )
    assert _times(res, "unsuspect", "C")
    assert min(_times(res, "unsuspect", "C")) > 500 * MS


def test_a_pause_is_a_false_suspicion_that_heals() -> None:
    res = _run(
        [
            {"at": "200ms", "action": "pause", "node": "B"},
            {"at": "400ms", "action": "resume", "node": "B"},
        ]
    )
    assert _times(res, "suspect", "B") and _times(res, "unsuspect", "B")
    assert min(_times(res, "unsuspect", "B")) >= 400 * MS


def test_a_new_node_is_announced() -> None:
    res = _run([{"at": "100ms", "action": "join", "node": "D"}], joiners=["D"])
    assert {e["node"] for e in res.events("unsuspect") if e["detail"]["peer"] == "D"} == {
        "A",
        "B",
        "C",
    }
