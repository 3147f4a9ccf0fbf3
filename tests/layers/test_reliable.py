"""Reliable unicast (Raincore's Transport Manager) on its own, directly and in the simulator."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from ringcast.core.effects import (
    Backpressure,
    CancelTimer,
    Deliver,
    Effect,
    Record,
    Send,
    SetTimer,
)
from ringcast.core.events import Event, Received, SendFailed, Start, Submit
from ringcast.core.machine import MachineContext
from ringcast.layers import ReliableUnicast, Stack
from ringcast.layers.reliable import TIMER_PREFIX as TIMER
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
    up1, _ = rt.on_data("A", RtData(2, 1, 0, m[1]), 0)
    assert up1 == []  # held back: seq 0 missing
    up0, acks = rt.on_data("A", RtData(2, 0, 0, m[0]), 0)
    assert [e.msg for e in up0] == [m[0], m[1]]
    assert acks == [Send("A", RtAck(2, 2, 1), 0)]
    dup, _ = rt.on_data("A", RtData(2, 0, 0, m[0]), 0)
    assert dup == []
    old, effects = rt.on_data("A", RtData(1, 2, 0, m[2]), 0)
    assert old == []  # an older incarnation is thrown away, and recorded as a drop
    assert [e.kind for e in effects if isinstance(e, Record)] == ["drop"]


@pytest.mark.parametrize(
    ("incarnation", "seq", "base", "dst"),
    [(0, 0, 0, 0), (-5, 0, 0, 0), (1, -1, -1, 0), (1, 3, 4, 0), (1, 3, -1, 0), (1, 0, 0, -1)],
)
def test_frames_no_sender_numbers_so_are_refused(
    incarnation: int, seq: int, base: int, dst: int
) -> None:
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    data = RtData(incarnation, seq, base, BasicData("A:1", b"", "fifo"), dst)
    up, effects = rt.on_data("A", data, 0)
    assert up == []
    assert effects == [Record.of("drop", reason="implausible_rtdata", src="A")]
    # ... and leave no state behind: the sender's real first frame is taken as usual.
    up, _ = rt.on_data("A", RtData(1, 0, 0, BasicData("A:1", b"", "fifo")), 0)
    assert len(up) == 1


def test_an_ack_for_frames_never_sent_takes_nothing_off_the_queue() -> None:
    rt = ReliableUnicast("A", rto=1000, max_tries=3, storage={})
    rt.send("B", BasicData("A:1", b"", "fifo"))  # seq 0; the next would be 1
    assert rt.on_ack("B", RtAck(rt.incarnation, 5, 1)) == ([], [])
    _, retransmitted = rt.on_timer(TIMER + "B")
    assert [e.msg.seq for e in retransmitted if isinstance(e, Send)] == [0]
    assert rt.on_ack("B", RtAck(rt.incarnation, 1, 1)) == ([], [CancelTimer(TIMER + "B")])


def test_a_bogus_incarnation_blocks_its_sender_for_forget_after_not_for_ever() -> None:
    """A corrupted frame that passed authentication names an incarnation the sender
    never had: the receiver follows it and drops the sender's real frames (an older
    incarnation), until nothing new came for forget_after."""
    bogus = RtData(2**62, 0, 0, None)
    rt = ReliableUnicast("B", rto=10_000_000, max_tries=3, storage={})
    assert rt.forget_after == 1_000_000_000  # the floor: 4 x 3 x 10 ms is less
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    assert len(rt.on_data("A", RtData(1, 0, 0, m[0]), 0, now=0)[0]) == 1
    rt.on_data("A", bogus, 0, now=1_000)
    t = 2_000
    while t < 1_000 + rt.forget_after:  # the sender retransmits; nothing gets through
        up, _ = rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=t)
        assert up == []
        t += 10_000_000
    up, _ = rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=1_000 + rt.forget_after)
    assert [e.msg for e in up] == [m[1]]
    up, _ = rt.on_data("A", RtData(1, 2, 1, m[2]), 0, now=1_000 + rt.forget_after)
    assert [e.msg for e in up] == [m[2]]


def test_a_quiet_honest_sender_is_forgotten_without_a_duplicate_or_a_gap() -> None:
    """Forgetting a sender that sent nothing for forget_after starts again at the next
    frame's base: what was delivered before is below it, nothing after it is skipped."""
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    rt.on_data("A", RtData(1, 0, 0, m[0]), 0, now=0)
    rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=10)
    late = rt.forget_after * 5
    up, acks = rt.on_data("A", RtData(1, 2, 2, m[2]), 0, now=late)
    assert [e.msg for e in up] == [m[2]]
    assert acks == [Send("A", RtAck(1, 3, 1), 0)]


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


def test_a_receiver_paused_past_forget_after_does_not_deliver_again() -> None:
    """The receiver delivered seq 0 and 1, then was paused (its acks never left) for
    longer than forget_after; on resuming it reads the sender's retransmissions of 1,
    sent long ago with base 1. It forgets the sender, but starts again above what it
    delivered: nothing twice (a Tribes integrity violation on real sockets, flapping
    links with pauses)."""
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    rt.on_data("A", RtData(1, 0, 0, m[0]), 0, now=0)
    rt.on_data("A", RtData(1, 1, 0, m[1]), 0, now=0)
    late = 2 * rt.forget_after
    up, acks = rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=late)
    assert up == [] and acks == [Send("A", RtAck(1, 2, 1), 0)]
    up, _ = rt.on_data("A", RtData(1, 2, 1, m[2]), 0, now=late)
    assert [e.msg for e in up] == [m[2]]


def test_a_frame_with_seq_and_base_both_bogus_blocks_its_sender_for_forget_after() -> None:
    """Both numbers corrupted together move the expected number far past every real
    one; once the sender is forgotten, a floor that far above its frames is not kept."""
    rt = ReliableUnicast("B", rto=10_000_000, max_tries=3, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    rt.on_data("A", RtData(1, 0, 0, m[0]), 0, now=0)
    rt.on_data("A", RtData(1, 2**62, 2**62, None), 0, now=1_000)
    assert rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=2_000)[0] == []
    late = 1_000 + rt.forget_after
    up, acks = rt.on_data("A", RtData(1, 1, 1, m[1]), 0, now=late)
    assert [e.msg for e in up] == [m[1]] and acks == [Send("A", RtAck(1, 2, 1), 0)]
    up, _ = rt.on_data("A", RtData(1, 2, 1, m[2]), 0, now=late)
    assert [e.msg for e in up] == [m[2]]


# -- a receiver's restart within its sender's retry window (docs/protocols/raincore.md,
#    decision 34)


def _frames(effects: list[Effect]) -> list[Any]:
    return [e.msg for e in effects if isinstance(e, Send)]


def _deliver(
    rt: ReliableUnicast, src: str, frames: list[Any], now: int
) -> tuple[list[Any], list[Effect]]:
    """Hand ``frames`` from ``src`` to ``rt``: (the payloads it hands up, what it sends)."""
    payloads: list[Any] = []
    out: list[Effect] = []
    for f in frames:
        up, down = rt.up(Received(src, f, 0), now)
        payloads += [e.msg for e in up if isinstance(e, Received)]
        out += down
    return payloads, out


def test_a_restarted_receiver_is_not_handed_what_its_earlier_boot_delivered() -> None:
    """B's first boot delivers m1 and crashes before its ack reaches A; B restarts at
    once (a new incarnation, no state) and reads A's retransmission of m1. The new
    boot does not deliver it (the old one may have, as here: the trace checker judges
    per node, and so does a user), acknowledges it, and A reports it with SendFailed:
    it was meant for a process that is gone. What A sends afterwards gets through."""
    a = ReliableUnicast("A", rto=1000, max_tries=5, storage={})
    b = ReliableUnicast("B", rto=1000, max_tries=5, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    _, out = a.down(Send("B", m[0], reliable=True), 0)
    got, acks = _deliver(b, "A", _frames(out), 1)
    assert got == [m[0]]
    a.up(Received("B", _frames(acks)[0], 0), 2)  # A has heard of B's first boot
    _, out = a.down(Send("B", m[1], reliable=True), 3)
    got, _lost = _deliver(b, "A", _frames(out), 4)
    assert got == [m[1]]

    b = ReliableUnicast("B", rto=1000, max_tries=5, storage={"rt.incarnation": b"1"})
    b.start(10)
    _, retransmitted = a.timer(TIMER + "B", 1003)
    got, out = _deliver(b, "A", _frames(retransmitted), 1004)
    assert got == []  # not delivered a second time, by the same node
    assert [e.kind for e in out if isinstance(e, Record)] == ["drop"]
    acks = _frames(out)
    assert len(acks) == 1  # acknowledged all the same: the link does not stall
    failed, down = a.up(Received("B", acks[0], 0), 1005)
    assert failed == [SendFailed("B", m[1], unanswered=False)]
    assert CancelTimer(TIMER + "B") in down  # nothing is left to retransmit

    _, out = a.down(Send("B", m[2], reliable=True), 1006)
    got, _ = _deliver(b, "A", _frames(out), 1007)
    assert got == [m[2]]


def test_a_receiver_restarted_within_the_retry_window_delivers_nothing_twice() -> None:
    """The same in the simulator: B's acks to A are cut at 500 ms, so A keeps
    retransmitting what B's first boot delivered since; B crashes at 530 ms and
    restarts at 540 ms, and the cut heals at 545 ms. Before decision 34 B's second
    boot delivered every message of A's retransmit queue again."""
    doc = _scenario(
        workload=[{"nodes": ["A"], "rate": 100, "count": 200, "start": "10ms"}],
        nemesis=[
            {"at": "500ms", "action": "cut", "from": ["B"], "to": ["A"]},
            {"at": "530ms", "action": "crash", "node": "B"},
            {"at": "540ms", "action": "restart", "node": "B"},
            {"at": "545ms", "action": "heal"},
        ],
        settings={"max_tries": 100},
    )
    res = Simulation(parse_scenario(doc), 3).run()
    got = _deliveries(res)[("B", "A")]
    assert len(got) == len(set(got)), sorted(c for c in set(got) if got.count(c) > 1)
    assert got[-1] == 200  # the link goes on after the restart
    refused = [
        e
        for e in res.events("drop")
        if e["node"] == "B" and e["detail"].get("reason") == "for_an_earlier_incarnation"
    ]
    assert refused
    # Delivered or reported failed, each message: those B's first boot took and could
    # not acknowledge (delivered there) and those sent to it after it crashed (never).
    failed = {
        int(e["msg"].split(":")[1])
        for e in res.events("send_failed_up")
        if e["detail"]["dst"] == "B"
    }
    assert failed and set(got) | failed == set(range(1, 201))
    assert failed & set(got)  # "failed" means not known to be delivered, as after max_tries


def test_frames_for_an_earlier_incarnation_keep_their_place_in_the_sequence() -> None:
    """Out of order and with a gap, the refused frames are skipped in order, each
    recorded once, and the first one meant for this incarnation (or for none known
    yet) is handed up after them."""
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={"rt.incarnation": b"2"})
    assert rt.incarnation == 3
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(5)]
    up, effects = rt.on_data("A", RtData(1, 3, 1, m[3], 3), 0)
    assert up == [] and effects == [Send("A", RtAck(1, 1, 3), 0)]  # waits for 1 and 2
    up, effects = rt.on_data("A", RtData(1, 2, 1, m[2], 2), 0)
    assert up == [] and [e.kind for e in effects if isinstance(e, Record)] == ["drop"]
    up, effects = rt.on_data("A", RtData(1, 1, 1, m[1], 1), 0)
    assert [e.msg for e in up] == [m[3]]
    assert effects[-1] == Send("A", RtAck(1, 4, 3), 0)
    up, effects = rt.on_data("A", RtData(1, 1, 1, m[1], 1), 0)  # a duplicate: acked only
    assert up == [] and effects == [Send("A", RtAck(1, 4, 3), 0)]
    up, _ = rt.on_data("A", RtData(1, 4, 1, m[4], 0), 0)
    assert [e.msg for e in up] == [m[4]]


def test_a_frame_from_an_earlier_incarnation_of_its_sender_is_dropped_and_recorded() -> None:
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    m = BasicData("A:1", b"", "fifo")
    up, _ = rt.on_data("A", RtData(2, 0, 0, m, 0), 0)
    assert [e.msg for e in up] == [m]
    up, effects = rt.on_data("A", RtData(1, 5, 0, m, 0), 0)  # A's boot before
    assert up == []
    assert effects == [
        Record.of("drop", reason="from_an_earlier_incarnation", src="A", incarnation=1)
    ]


def test_a_destination_incarnation_above_the_receivers_own_is_handed_up() -> None:
    """A receiver that lost its stable storage counts from 1 again; its senders name
    the incarnation they heard of before. Their frames still get through."""
    rt = ReliableUnicast("B", rto=1000, max_tries=3, storage={})
    up, _ = rt.on_data("A", RtData(1, 0, 0, BasicData("A:0", b"", "fifo"), 7), 0)
    assert len(up) == 1


def test_the_sender_learns_the_receivers_incarnation_and_names_it() -> None:
    """From an ack (its acker_incarnation) and from the peer's own data frames; a
    retransmission keeps the incarnation its frame was first sent to."""
    a = ReliableUnicast("A", rto=1000, max_tries=5, storage={})
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    first = a.send("B", m[0])[0]
    assert isinstance(first, Send) and first.msg.dst_incarnation == 0
    a.on_data("B", RtData(4, 0, 0, BasicData("B:0", b"", "fifo")), 0)  # B is in its 4th
    second = a.send("B", m[1])[0]
    assert isinstance(second, Send) and second.msg.dst_incarnation == 4
    up, _ = a.on_ack("B", RtAck(a.incarnation, 0, 6))  # B's 6th acks nothing new
    assert up == [] and a.peer_incarnation["B"] == 6
    _, retransmitted = a.on_timer(TIMER + "B")
    assert [e.msg.dst_incarnation for e in retransmitted if isinstance(e, Send)] == [0, 4]
    third = a.send("B", m[2])[0]
    assert isinstance(third, Send) and third.msg.dst_incarnation == 6
    a.on_ack("B", RtAck(a.incarnation, 0, 5))  # a late ack of an earlier one
    assert a.peer_incarnation["B"] == 6


def test_an_ack_by_the_incarnation_a_frame_was_meant_for_is_a_delivery() -> None:
    """A late ack of B's earlier boot, for frames named for it, is what it says: they
    were delivered. The same frames acked by B's next boot were refused there."""
    a = ReliableUnicast("A", rto=1000, max_tries=5, storage={})
    a.on_data("B", RtData(2, 0, 0, BasicData("B:0", b"", "fifo")), 0)
    m = [BasicData(f"A:{i}", b"", "fifo") for i in range(3)]
    for msg in m:
        a.send("B", msg)
    up, effects = a.on_ack("B", RtAck(a.incarnation, 1, 2))
    assert up == [] and effects == [SetTimer(TIMER + "B", 1000)]
    up, effects = a.on_ack("B", RtAck(a.incarnation, 3, 3))
    assert up == [SendFailed("B", m[1], False), SendFailed("B", m[2], False)]
    assert effects == [
        Record.of("send_failed", dst="B", messages=2, reason="receiver_restarted"),
        CancelTimer(TIMER + "B"),
    ]


@pytest.mark.parametrize("acker", [0, -1, -(2**62)])
def test_an_ack_naming_no_incarnation_is_refused(acker: int) -> None:
    a = ReliableUnicast("A", rto=1000, max_tries=5, storage={})
    a.send("B", BasicData("A:0", b"", "fifo"))
    up, effects = a.on_ack("B", RtAck(a.incarnation, 1, acker))
    assert up == [] and effects == [Record.of("drop", reason="implausible_rtack", src="B")]
    assert "B" not in a.peer_incarnation
    _, retransmitted = a.on_timer(TIMER + "B")  # still queued
    assert [e.msg.seq for e in retransmitted if isinstance(e, Send)] == [0]


# -- the window: flow control toward the application (docs/protocols/tribes.md, decision 20)


def test_a_window_holds_the_application_at_window_unacked_and_releases_at_half() -> None:
    rt = ReliableUnicast("A", rto=10, max_tries=3, storage={}, window=4)
    out: list[Effect] = []
    for k in range(3):
        out += rt.send("B", k)
    assert not [e for e in out if isinstance(e, Backpressure)] and not rt.blocked
    assert Backpressure(True) in rt.send("B", 3)  # the fourth in flight to B
    assert rt.blocked
    assert Backpressure(True) not in rt.send("C", 4)  # said once
    _, effects = rt.on_ack("B", RtAck(rt.incarnation, 1, 1))  # B: 3 in flight, above 2
    assert Backpressure(False) not in effects
    _, effects = rt.on_ack("B", RtAck(rt.incarnation, 2, 1))  # B: 2, C: 1
    assert Backpressure(False) in effects and not rt.blocked


def test_a_window_is_released_when_the_peer_holding_it_fails() -> None:
    rt = ReliableUnicast("A", rto=10, max_tries=2, storage={}, window=2)
    rt.send("B", 0)
    assert Backpressure(True) in rt.send("B", 1)
    rt.on_timer(TIMER + "B")  # the second transmission
    up, effects = rt.on_timer(TIMER + "B")  # max_tries: failure-on-delivery
    assert [type(e) for e in up] == [SendFailed, SendFailed]
    assert Backpressure(False) in effects and not rt.blocked


def test_without_a_window_the_layer_never_holds_the_application() -> None:
    rt = ReliableUnicast("A", rto=10, max_tries=3, storage={})
    effects = [e for k in range(1000) for e in rt.send("B", k)]
    assert not [e for e in effects if isinstance(e, Backpressure)]


def test_retransmissions_back_off_up_to_rto_max() -> None:
    """With ``rto_max`` the wait doubles after each unanswered try (RFC 6298, 5.5): the
    first retransmission after ``rto``, failure-on-delivery after the whole budget."""
    ms = 1_000_000
    r = ReliableUnicast("A", rto=10 * ms, max_tries=6, storage={}, rto_max=40 * ms)
    assert [r.wait(k) for k in range(1, 7)] == [
        10 * ms,
        20 * ms,
        40 * ms,
        40 * ms,
        40 * ms,
        40 * ms,
    ]
    assert r.budget == 190 * ms
    assert ReliableUnicast("A", rto=10 * ms, max_tries=6, storage={}).budget == 60 * ms
    effects = r.send("B", "token")
    waits = [e.delay for e in effects if isinstance(e, SetTimer)]
    up: list[Event] = []
    for _ in range(6):
        up, effects = r.on_timer(TIMER + "B")
        waits += [e.delay for e in effects if isinstance(e, SetTimer)]
    assert waits == [10 * ms, 20 * ms, 40 * ms, 40 * ms, 40 * ms, 40 * ms]
    assert [type(e) for e in up] == [SendFailed]  # after the sixth try's wait
    with pytest.raises(ValueError, match="rto_max"):
        ReliableUnicast("A", rto=10 * ms, max_tries=6, storage={}, rto_max=5 * ms)


def _timer_waits(effects: list[Effect]) -> list[int]:
    return [e.delay for e in effects if isinstance(e, SetTimer)]


def test_an_adaptive_timeout_follows_a_slow_peers_round_trips() -> None:
    """With ``rto_ceiling`` a frame sent once and acked measures the round trip (RFC 6298):
    a peer that takes 15 ms to ack is waited for srtt + 4 x rttvar = 45 ms before a
    retransmission, not the 10 ms of ``rto``; a peer quicker than ``rto`` keeps it."""
    ms = 1_000_000
    r = ReliableUnicast("A", rto=10 * ms, max_tries=3, storage={}, rto_ceiling=100 * ms)
    assert _timer_waits(r.send("B", 0, now=0)) == [10 * ms]
    r.on_ack("B", RtAck(r.incarnation, 1, 1), now=15 * ms)
    assert r.peer_rto("B") == 45 * ms
    assert _timer_waits(r.send("B", 1, now=20 * ms)) == [45 * ms]
    _, effects = r.on_timer(TIMER + "B")  # no ack within 45 ms: retransmitted
    assert _timer_waits(effects) == [45 * ms]
    assert len([e for e in effects if isinstance(e, Send)]) == 1
    # Karn's rule: the ack of a retransmitted frame measures nothing.
    r.on_ack("B", RtAck(r.incarnation, 2, 1), now=300 * ms)
    assert r.peer_rto("B") == 45 * ms
    # A round trip above the ceiling: the wait stops at rto_ceiling.
    r.send("B", 2, now=400 * ms)
    r.on_ack("B", RtAck(r.incarnation, 3, 1), now=900 * ms)
    assert r.peer_rto("B") == 100 * ms
    # A peer quicker than rto is retransmitted to after rto, as without adaptation.
    assert _timer_waits(r.send("C", 0, now=0)) == [10 * ms]
    r.on_ack("C", RtAck(r.incarnation, 1, 1), now=1 * ms)
    assert r.peer_rto("C") == 10 * ms
    with pytest.raises(ValueError, match="rto_ceiling"):
        ReliableUnicast("A", rto=10 * ms, max_tries=3, storage={}, rto_ceiling=5 * ms)


def test_an_adaptive_timeout_still_fails_on_delivery_after_max_tries() -> None:
    """A peer that stops answering is given up after ``max_tries`` transmissions, each
    waited for the peer's current timeout."""
    ms = 1_000_000
    r = ReliableUnicast("A", rto=10 * ms, max_tries=3, storage={}, rto_ceiling=100 * ms)
    r.send("B", 0, now=0)
    r.on_ack("B", RtAck(r.incarnation, 1, 1), now=20 * ms)  # srtt 20, rttvar 10: 60 ms
    waits = _timer_waits(r.send("B", "token", now=30 * ms))
    up: list[Event] = []
    for _ in range(3):
        up, effects = r.on_timer(TIMER + "B")
        waits += _timer_waits(effects)
    assert waits == [60 * ms, 60 * ms, 60 * ms]
    assert [type(e) for e in up] == [SendFailed]


def test_without_a_ceiling_the_timeout_does_not_adapt() -> None:
    ms = 1_000_000
    r = ReliableUnicast("A", rto=10 * ms, max_tries=3, storage={})
    r.send("B", 0, now=0)
    r.on_ack("B", RtAck(r.incarnation, 1, 1), now=50 * ms)
    assert r.peer_rto("B") == 10 * ms
    assert _timer_waits(r.send("B", 1, now=60 * ms)) == [10 * ms]
