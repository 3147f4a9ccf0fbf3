"""Reliable unicast (Raincore's Transport Manager) on its own, directly and in the simulator."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from ringcast.core.effects import Deliver, Effect, Record, Send, SetTimer
from ringcast.core.events import Event, Received, SendFailed, Start, Submit
from ringcast.core.machine import MachineContext
from ringcast.layers import ReliableUnicast, Stack
from ringcast.layers.reliable import RtAck, RtData
from ringcast.protocols.basic.machine import BasicData
from ringcast.protocols.registry import ProtocolSpec, Setting, register
from ringcast.sim import Simulation, parse_scenario


class Probe:
    """Sends every submitted message reliably to every other node; reports failures."""

    def __init__(self, ctx: MachineContext):
        self.node_id = ctx.node_id
        self.peers = [p for p in ctx.peers if p != ctx.node_id]

    def handle(self, event: Event, now: int) -> list[Effect]:
        if isinstance(event, Submit):
            data = BasicData(event.msg_id, event.payload, "fifo")
            return [Send(p, data, reliable=True) for p in self.peers]
        if isinstance(event, Received) and isinstance(event.msg, BasicData):
            return [Deliver(event.msg.msg_id, event.msg.payload, "fifo", event.src)]
        if isinstance(event, SendFailed):
            return [Record.of("send_failed_up", dst=event.dst, msg=event.msg.msg_id)]
        return []


def _make_probe(ctx: MachineContext) -> Stack:
    s = ctx.settings
    rt = ReliableUnicast(
        ctx.node_id, rto=s["rto"], max_tries=s["max_tries"], storage=dict(ctx.storage)
    )
    return Stack(Probe(ctx), reliable=rt)


register(
    ProtocolSpec(
        "test_reliable_probe",
        _make_probe,
        settings={"rto": Setting("duration", 10_000_000), "max_tries": Setting("int", 4)},
    )
)


def _scenario(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "probe",
        "protocol": "test_reliable_probe",
        "nodes": ["A", "B", "C"],
        "duration": "3s",
        "workload": [{"nodes": ["A", "B"], "rate": 200, "count": 100, "start": "10ms"}],
    }
    doc.update(extra)
    return doc


def _deliveries(res: Any) -> dict[tuple[str, str], list[int]]:
    """(receiver, sender) -> the sender's counters in delivery order."""
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for e in res.events("deliver"):
        sender, counter = e["msg"].split(":")
        out[(e["node"], sender)].append(int(counter))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_exactly_once_in_order_over_a_bad_network(seed: int) -> None:
    net = {
        "latency": {"dist": "uniform", "low": "100us", "high": "5ms"},
        "loss": 0.3,
        "duplication": 0.2,
        "reorder": 0.3,
    }
    res = Simulation(parse_scenario(_scenario(network=net, settings={"max_tries": 50})), seed).run()
    got = _deliveries(res)
    for sender in ("A", "B"):
        for receiver in ("A", "B", "C"):
            if receiver != sender:
                assert got[(receiver, sender)] == list(range(1, 101)), (receiver, sender)
    assert not res.events("send_failed_up")
    assert res.summary["messages_lost"] > 0  # the network really did lose frames


def test_send_failed_for_every_queued_message_when_the_peer_is_gone() -> None:
    doc = _scenario(nemesis=[{"at": "0s", "action": "crash", "node": "C"}])
    res = Simulation(parse_scenario(doc), 1).run()
    failed = [e for e in res.events("send_failed_up") if e["detail"]["dst"] == "C"]
    # Every message A and B sent to C is reported failed, none to the live peers.
    assert sorted(e["msg"] for e in failed) == sorted(
        f"{s}:{i}" for s in "AB" for i in range(1, 101)
    )
    assert all(e["detail"]["dst"] == "C" for e in res.events("send_failed_up"))
    # Failure is reported no sooner than max_tries retransmission timeouts after the first send.
    first_fail = min(e["t"] for e in failed)
    assert first_fail >= 10_000_000 + 4 * 10_000_000


def test_receiver_restart_does_not_stall_the_sender() -> None:
    doc = _scenario(
        workload=[{"nodes": ["A"], "rate": 100, "count": 200, "start": "10ms"}],
        nemesis=[
            {"at": "500ms", "action": "crash", "node": "B"},
            {"at": "700ms", "action": "restart", "node": "B"},
        ],
        settings={"max_tries": 100},
    )
    res = Simulation(parse_scenario(doc), 3).run()
    got = _deliveries(res)[("B", "A")]
    after = [c for c in got if c > 75]
    assert after and after == list(range(after[0], 201))  # in order, no gap after the restart


def test_sender_restart_is_a_new_incarnation() -> None:
    doc = _scenario(
        workload=[{"nodes": ["A"], "rate": 100, "count": 150, "start": "10ms"}],
        nemesis=[
            {"at": "500ms", "action": "crash", "node": "A"},
            {"at": "600ms", "action": "restart", "node": "A"},
        ],
    )
    res = Simulation(parse_scenario(doc), 3).run()
    got = _deliveries(res)[("B", "A")]
    assert got[-1] == 150  # messages sent after the restart got through
    assert len(got) == len(set(got))


def test_duplicates_and_reordering_directly() -> None:
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    up1, _ = rt.on_data("A", RtData(1, 1, 0, m[1]), 0)
    assert up1 == []  # held back: seq 0 missing
    up0, acks = rt.on_data("A", RtData(1, 0, 0, m[0]), 0)
    assert [e.msg for e in up0] == [m[0], m[1]]
    assert acks == [Send("A", RtAck(1, 2), 0)]
    dup, _ = rt.on_data("A", RtData(1, 0, 0, m[0]), 0)
    assert dup == []
    old, effects = rt.on_data("A", RtData(0, 2, 0, m[2]), 0)
    assert old == [] and effects == []  # an older incarnation is ignored


def test_incarnation_is_persisted_and_increases() -> None:
    rt = ReliableUnicast("A", rto=1000, max_tries=3, storage={"rt.incarnation": b"4"})
    assert rt.incarnation == 5
    assert next(e for e in rt.start() if e.key == "rt.incarnation").value == b"5"
    effects = rt.send("B", BasicData("A:1", b"", "fifo"))
    assert isinstance(effects[0], Send) and effects[0].msg.incarnation == 5
    assert any(isinstance(e, SetTimer) for e in effects)


def test_stack_routes_reliable_sends_and_start() -> None:
    ctx = MachineContext("A", ("A", "B"), ("A", "B"), {"rto": 10, "max_tries": 2})
    stack = _make_probe(ctx)
    effects = stack.handle(Start(), 0)
    assert any(getattr(e, "key", None) == "rt.incarnation" for e in effects)
    out = stack.handle(Submit("A:1", b"x", "fifo"), 0)
    assert [type(e.msg) for e in out if isinstance(e, Send)] == [RtData]
