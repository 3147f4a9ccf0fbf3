"""``basic`` flow control: a window of unacknowledged messages per peer, Backpressure,
and no peer blocking the others forever."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ringcast.core.effects import Backpressure, Deliver, Effect, Persist, Send
from ringcast.core.events import Event, Received, SendFailed, Start, Submit, Suspected
from ringcast.core.machine import Machine, MachineContext
from ringcast.protocols import registry
from ringcast.protocols.basic import SPEC, BasicAck, BasicData, BasicMachine, make_basic
from ringcast.sim import Simulation
from ringcast.sim.scenario import parse_scenario

WINDOW = 16


class Probe:
    """basic's stack, recording the largest in-flight count and retransmit queue."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.node_id = inner.node_id
        self.max_in_flight = 0
        self.max_queued = 0
        self.blocked_on = 0

    def handle(self, event: Event, now: int) -> list[Effect]:
        out = self.inner.handle(event, now)
        up: BasicMachine = self.inner.upper
        for peer in up.peers:
            self.max_in_flight = max(self.max_in_flight, up.in_flight(peer))
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
        assert 0 < probe.max_in_flight <= WINDOW, node
        # The reliable layer's queue to a peer: the window plus a few acks.
        assert probe.max_queued <= WINDOW + 4, node
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
        assert probe.max_in_flight <= WINDOW


def test_a_crashed_peer_does_not_block_the_others() -> None:
    res, rows = run(rate=10_000, nemesis=CRASH_D)
    late = [r for r in rows if r["kind"] == "deliver" and 400_000_000 < r["t"] <= 500_000_000]
    for node in "ABC":
        senders = {r["msg"].split(":")[0] for r in late if r["node"] == node}
        assert senders == set("ABC"), node  # everyone still gets everyone's messages
        up = res.machines[node].inner.upper
        assert up.in_flight("D") == 0 and not up.blocked
        assert res.machines[node].max_queued <= WINDOW + 4
    assert_fifo_exactly_once(rows, "ABC")


# -- the machine alone


def machine(node: str = "A", window: int = 4, storage: dict | None = None) -> BasicMachine:
    ctx = MachineContext(node, ("A", "B", "C"), ("A", "B", "C"), storage=storage or {})
    m = BasicMachine(ctx, window=window)
    m.handle(Start(), 0)
    return m


def submit(m: BasicMachine, k: int) -> list[Effect]:
    return m.handle(Submit(f"{m.node_id}:{k}", b"x", "fifo"), 0)


def test_backpressure_at_the_window_released_at_half() -> None:
    m = machine()
    for k in range(1, 4):
        assert Backpressure(True) not in submit(m, k)
    out = submit(m, 4)
    assert Backpressure(True) in out
    sends = [e for e in out if type(e) is Send]
    assert {e.dst for e in sends} == {"B", "C"} and all(e.reliable for e in sends)
    assert sends[0].msg == BasicData("A:4", b"x", "fifo", m.epoch, 4)
    assert m.handle(Received("B", BasicAck(m.epoch, 2)), 0) == []  # C still has 4
    assert m.handle(Received("C", BasicAck(m.epoch, 3)), 0) == [Backpressure(False)]
    assert m.handle(Received("C", BasicAck(m.epoch - 1, 4)), 0) == []  # an earlier boot's
    assert m.in_flight("C") == 1


def test_send_failed_and_suspicion_drop_the_in_flight_count() -> None:
    m = machine()
    for k in range(1, 5):
        submit(m, k)
    assert m.blocked
    data = BasicData("A:4", b"x", "fifo", m.epoch, 4)
    m.handle(Received("B", BasicAck(m.epoch, 4)), 0)
    assert m.handle(SendFailed("C", data), 0) == [Backpressure(False)]
    assert m.in_flight("C") == 0
    for k in range(5, 9):
        submit(m, k)
    assert m.blocked
    m.handle(Received("C", BasicAck(m.epoch, 8)), 0)
    out = m.handle(Suspected("B"), 0)
    assert Backpressure(False) in out and m.in_flight("B") == 0
    assert all(e.dst != "B" for e in submit(m, 9) if type(e) is Send)


def test_receiver_acks_every_quarter_window_per_sender_boot() -> None:
    b = machine("B", window=8)
    acks = []
    for k in range(1, 6):
        out = b.handle(Received("A", BasicData(f"A:{k}", b"", "fifo", 1, k)), 0)
        assert type(out[0]) is Deliver
        acks += [e.msg for e in out if type(e) is Send]
    assert acks == [BasicAck(1, 2), BasicAck(1, 4)]
    # A restarted sender (epoch 2) starts over; a restarted receiver acks what it sees.
    out = b.handle(Received("A", BasicData("A:9", b"", "fifo", 2, 2)), 0)
    assert [e.msg for e in out if type(e) is Send] == [BasicAck(2, 2)]


def test_a_corrupted_seq_does_not_stop_the_acks() -> None:
    """One boot's messages reach the receiver in order; a corrupted seq far above the
    rest kept the receiver's count there, so it never acknowledged again and the
    sender's window stayed full for good (the garble soak: B stopped multicasting)."""
    b = machine("B", window=8)
    acks = []
    for k, seq in enumerate([1, 2, 2**62, 3, 4, 5], start=1):
        out = b.handle(Received("A", BasicData(f"A:{k}", b"", "fifo", 1, seq)), 0)
        acks += [e.msg for e in out if type(e) is Send]
    assert acks == [BasicAck(1, 2), BasicAck(1, 2**62), BasicAck(1, 4)]


def test_epoch_is_persisted_and_advances_at_every_boot() -> None:
    ctx = MachineContext("A", ("A", "B"), ("A", "B"))
    out = BasicMachine(ctx).handle(Start(), 0)
    (p,) = [e for e in out if type(e) is Persist]
    again = BasicMachine(MachineContext("A", ("A", "B"), ("A", "B"), storage={p.key: p.value}))
    assert again.epoch == 2


def test_the_wire_frames_are_small() -> None:
    from ringcast.core.codec import encode

    assert len(encode(BasicAck(3, 1000), sender="B")) < 40
