"""The heartbeat failure detector on its own in the simulator."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import Effect, Record
from ringcast.core.events import Event, Suspected, Unsuspected
from ringcast.core.machine import MachineContext
from ringcast.core.scale import doublings
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
    fd = HeartbeatDetector(
        ctx.node_id,
        ctx.members,
        interval=s["interval"],
        misses=s["misses"],
        per_doubling=s["per_doubling"],
        verify=s["verify"],
    )
    return Stack(Watcher(ctx), detector=fd)


register(
    ProtocolSpec(
        "test_fd_watcher",
        _make,
        settings={
            "interval": Setting("duration", 10 * MS),
            "misses": Setting("int", 3),
            "per_doubling": Setting("int", 0),
            "verify": Setting("duration", 0),
        },
    )
)


def _run(nemesis: list[dict[str, Any]], joiners: list[str] | None = None, **settings: Any) -> Any:
    doc = {
        "protocol": "test_fd_watcher",
        "settings": settings,
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


def test_a_suspicion_is_confirmed_by_a_direct_probe() -> None:
    """With ``verify`` a peer silent for the detection time (30 ms) is probed and
    suspected only if still silent 30 ms later: a 45 ms pause (a process off the CPU)
    costs no suspicion, where without the probe it is one at each peer; a crash is
    suspected once, one ``verify`` later, and a 200 ms pause still is (and heals)."""
    pause = [
        {"at": "200ms", "action": "pause", "node": "B"},
        {"at": "245ms", "action": "resume", "node": "B"},
    ]
    assert len(_times(_run(pause), "suspect", "B")) == 2
    res = _run(pause, verify="30ms")
    assert not res.events("suspect") and not res.events("unsuspect")
    crash = _run([{"at": "200ms", "action": "crash", "node": "C"}], verify="30ms")
    for node in ("A", "B"):
        (t,) = [e["t"] for e in crash.events("suspect", node) if e["detail"]["peer"] == "C"]
        assert 200 * MS + 30 * MS < t <= 200 * MS + 7 * 10 * MS
    long = [
        {"at": "200ms", "action": "pause", "node": "B"},
        {"at": "400ms", "action": "resume", "node": "B"},
    ]
    res = _run(long, verify="30ms")
    assert _times(res, "suspect", "B") and min(_times(res, "unsuspect", "B")) >= 400 * MS


def test_a_new_node_is_announced() -> None:
    res = _run([{"at": "100ms", "action": "join", "node": "D"}], joiners=["D"])
    assert {e["node"] for e in res.events("unsuspect") if e["detail"]["peer"] == "D"} == {
        "A",
        "B",
        "C",
    }


# -- groups larger than eight (docs/protocols/gms.md, "Failure detection that scales with
# the group")


def test_doublings_beyond_eight() -> None:
    sizes = {1: 0, 3: 0, 8: 0, 9: 1, 16: 1, 17: 2, 24: 2, 32: 2, 33: 3, 64: 3, 65: 4, 100: 4}
    assert {n: doublings(n) for n in sizes} == sizes


def test_misses_in_force_grow_by_per_doubling_beyond_eight_members() -> None:
    def misses(n: int, per_doubling: int) -> int:
        names = tuple(f"N{k}" for k in range(n))
        fd = HeartbeatDetector(names[0], names, interval=MS, misses=4, per_doubling=per_doubling)
        return fd.misses

    assert [misses(n, 1) for n in (2, 8, 9, 16, 17, 32, 33, 64)] == [4, 4, 5, 5, 6, 6, 7, 7]
    assert [misses(n, 2) for n in (8, 16, 32)] == [4, 6, 8]
    assert [misses(n, 0) for n in (8, 32, 64)] == [4, 4, 4]


def _group(n: int, loss: float, per_doubling: int, nemesis: list[dict[str, Any]]) -> Any:
    doc = {
        "protocol": "test_fd_watcher",
        "nodes": [f"N{k:02}" for k in range(n)],
        "duration": "5s",
        "settings": {"interval": "50ms", "misses": 4, "per_doubling": per_doubling},
        "network": {"latency": {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"}, "loss": loss},
        "nemesis": nemesis,
    }
    return Simulation(parse_scenario(doc), 1).run()


def test_a_group_of_32_suspects_live_peers_about_as_often_as_one_of_8() -> None:
    """25 % loss, no fault: every suspicion is false. 8 members watch 56 links, 32 watch
    992; with one more miss per doubling (6 at 32), 32 members suspect about as often as
    8 with 4 misses, where 4 misses at 32 suspect 18 times as often."""
    eight = len(_group(8, 0.25, 1, []).events("suspect"))
    now = len(_group(32, 0.25, 1, []).events("suspect"))
    before = len(_group(32, 0.25, 0, []).events("suspect"))
    assert eight > 0 and now <= 2 * eight
    assert before >= 10 * max(now, eight)


def test_a_crash_in_a_group_of_32_is_suspected_within_seven_intervals() -> None:
    """The bound: (misses in force + 1) intervals after the crash, here (4 + 2 + 1) x 50
    ms. The crashed member's last heartbeat left 27 ms before the crash; every other
    member suspects it at its first tick 300 ms (6 intervals) after hearing it."""
    res = _group(32, 0.0, 1, [{"at": "1027ms", "action": "crash", "node": "N31"}])
    rows = res.events("suspect")
    assert {e["detail"]["peer"] for e in rows} == {"N31"}
    assert {e["node"] for e in rows} == {f"N{k:02}" for k in range(31)}
    for e in rows:
        assert 1027 * MS + 6 * 50 * MS - 27 * MS < e["t"] <= 1027 * MS + 7 * 50 * MS
