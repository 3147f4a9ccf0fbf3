"""``basic`` flow control: the reliable layer's window of unacknowledged messages per
peer, Backpressure, and no peer blocking the others forever."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ringcast.core.effects import Backpressure, Effect
from ringcast.core.events import Event
from ringcast.core.machine import Machine, MachineContext
from ringcast.protocols import registry
from ringcast.protocols.basic import SPEC, BasicData, make_basic
from ringcast.sim import Simulation
from ringcast.sim.scenario import parse_scenario

WINDOW = 16


class Probe:
    """basic's stack, recording the largest retransmit queue to a peer (the messages in
    flight to it) and how often the host was held."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.node_id = inner.node_id
        self.max_queued = 0
        self.blocked_on = 0

    def queued(self, peer: str) -> int:
        ob = self.inner.reliable._out.get(peer)
        return len(ob.unacked) if ob is not None else 0

    def handle(self, event: Event, now: int) -> list[Effect]:
        out = self.inner.handle(event, now)
        for ob in self.inner.reliable._out.values():
            self.max_queued = max(self.max_queued, len(ob.unacked))
        self.blocked_on += sum(1 for e in out if type(e) is Backpressure and e.blocked)
        return out


def _probe(ctx: MachineContext) -> Machine:
    return Probe(make_basic(ctx))


PROBE = registry.register(registry.ProtocolSpec("basic-probe", _probe, settings=SPEC.settings))


def run(
    *, rate: float, loss: float = 0.0, dup: float = 0.0, nemesis: list | None = None, **kw: Any
) -> tuple[Any, list[dict]]:
    doc = {
        "name": "basic_flow",
        "protocol": PROBE.name,
        "nodes": ["A", "B", "C", "D"],
        "duration": kw.get("duration", "800ms"),
        "settings": {"window": WINDOW, "rto": "5ms", "heartbeat_interval": "20ms"},
        "network": {
            "latency": {"dist": "uniform", "low": "200us", "high": "1ms"},
            "loss": loss,
            "duplication": dup,
        },
        "workload": [
            {"nodes": "all", "rate": rate, "size": 1024, "order": "fifo", "duration": "500ms"}
        ],
        "nemesis": nemesis or [],
    }
    res = Simulation(parse_scenario(doc, "basic_flow"), seed=3).run()
    return res, res.events()


def deliveries(rows: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["kind"] == "deliver":
            out[r["node"]].append(r["msg"])
    return out


def assert_fifo_exactly_once(rows: list[dict], nodes: str) -> None:
    submitted = {r["msg"] for r in rows if r["kind"] == "submit"}
    got = deliveries(rows)
    for node in nodes:
        seq = got[node]
        assert len(seq) == len(set(seq)), node
        assert set(seq) <= submitted
        per_sender: dict[str, list[int]] = defaultdict(list)
        for m in seq:
            sender, k = m.split(":")
            per_sender[sender].append(int(k))
        for sender, ks in per_sender.items():
            assert ks == sorted(ks), (node, sender)


def test_saturated_run_keeps_in_flight_within_the_window_and_loses_nothing() -> None:
    res, rows = run(rate=10_000)
    submitted = [r["msg"] for r in rows if r["kind"] == "submit"]
    assert len(submitted) < 4 * 10_000 * 0.5 * 0.9  # the senders were held back
    for node, probe in res.machines.items():
        assert probe.blocked_on >= 1, node
        assert 0 < probe.max_queued <= WINDOW, node
    got = deliveries(rows)
    for node in "ABCD":
        assert set(got[node]) == set(submitted), node  # nothing lost
    assert_fifo_exactly_once(rows, "ABCD")


CRASH_D = [{"at": "200ms", "action": "crash", "node": "D"}]


def test_without_the_window_the_queues_grow() -> None:
    """What the window prevents: the same load and a crash, with a huge window, queue
    everything sent to the dead peer until the transport gives up on it."""
    global WINDOW
    saved, WINDOW = WINDOW, 1 << 20
    try:
        res, _ = run(rate=10_000, duration="350ms", nemesis=CRASH_D)
    finally:
        WINDOW = saved
    assert max(p.max_queued for n, p in res.machines.items() if n != "D") > 10 * saved


def test_fifo_and_exactly_once_with_loss_and_duplication() -> None:
    res, rows = run(rate=3_000, loss=0.05, dup=0.02, duration="1500ms")
    submitted = {r["msg"] for r in rows if r["kind"] == "submit"}
    assert_fifo_exactly_once(rows, "ABCD")
    for node in "ABCD":
        assert set(deliveries(rows)[node]) == submitted, node
    for probe in res.machines.values():
        assert probe.max_queued <= WINDOW


def test_a_crashed_peer_does_not_block_the_others() -> None:
    res, rows = run(rate=10_000, nemesis=CRASH_D)
    late = [r for r in rows if r["kind"] == "deliver" and 400_000_000 < r["t"] <= 500_000_000]
    for node in "ABC":
        senders = {r["msg"].split(":")[0] for r in late if r["node"] == node}
        assert senders == set("ABC"), node  # everyone still gets everyone's messages
        probe = res.machines[node]
        assert probe.queued("D") == 0 and not probe.inner.reliable.blocked
        assert probe.max_queued <= WINDOW
    assert_fifo_exactly_once(rows, "ABC")


def test_the_wire_frames_are_small() -> None:
    from ringcast.core.codec import encode

    assert len(encode(BasicData("A:1000", b"", "fifo"), sender="A")) < 40
