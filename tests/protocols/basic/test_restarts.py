"""``basic`` across a receiver's restart: a message sent to an earlier boot of a node is
not delivered by its new boot (it was addressed to a process that crashed, and may have
delivered it already), and is still acknowledged so the sender's window drains.

Found by the hostile generator once basic declared its failure-detection timeout (seed
168: A delivered C:54, crashed before its ack got through, restarted 59 ms later, and
delivered C:54 again from C's retransmission).
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.protocols.gms import checks

from ringcast.core.effects import Deliver, Effect, Record, Send
from ringcast.core.events import Received, Start, Submit
from ringcast.core.machine import MachineContext
from ringcast.protocols.basic import BasicAck, BasicData, BasicMachine
from ringcast.sim import Simulation
from ringcast.sim.garble import detection_timeout
from ringcast.sim.hostile import hostile_scenario


def _machine(storage: dict[str, bytes]) -> BasicMachine:
    m = BasicMachine(MachineContext("A", ("A", "C"), ("A", "C"), storage=storage), window=4)
    m.handle(Start(), 0)
    return m


def test_a_message_for_an_earlier_boot_is_acknowledged_not_delivered() -> None:
    first = _machine({})
    assert first.epoch == 1
    out = first.handle(Received("C", BasicData("C:1", b"x", "fifo", 3, 1, 0)), 1)
    assert [type(e) for e in out if type(e) is not Send] == [Deliver]  # no boot heard of yet
    out = first.handle(Received("C", BasicData("C:2", b"x", "fifo", 3, 2, 1)), 2)
    assert [type(e) for e in out if type(e) is not Send] == [Deliver]  # for this boot

    again = _machine({"basic.epoch": b"1"})  # A restarted: its second boot
    assert again.epoch == 2
    delivered: list[str] = []
    for seq, dst_epoch in ((1, 1), (2, 1), (3, 2), (4, 0)):
        out = again.handle(Received("C", BasicData(f"C:{seq}", b"x", "fifo", 3, seq, dst_epoch)), 3)
        delivered += [e.msg_id for e in out if type(e) is Deliver]
        if dst_epoch == 1:
            assert any(type(e) is Record and e.kind == "drop" for e in out)
    assert delivered == ["C:3", "C:4"]
    # all four are acknowledged (window 4: an ack every message), with A's boot in it
    out = again.handle(Received("C", BasicData("C:5", b"", "fifo", 3, 5, 1)), 4)
    acks = [e.msg for e in out if type(e) is Send]
    assert acks == [BasicAck(3, 5, 2)]


def test_the_sender_addresses_each_peer_by_the_boot_it_last_heard_of() -> None:
    c = BasicMachine(MachineContext("C", ("A", "C"), ("A", "C")), window=4)
    c.handle(Start(), 0)
    c.handle(Received("A", BasicData("A:1", b"", "fifo", 2, 1, 0)), 1)  # A is in boot 2
    sent = [e.msg for e in c.handle(Received("A", BasicAck(c.epoch, 0, 5)), 2)]
    assert sent == []  # an ack names A's boot 5
    out = c.handle(Submit("C:1", b"y", "fifo"), 3)
    data = [e.msg for e in out if type(e) is Send]
    assert data and data[0].dst_epoch == 5


def test_hostile_seed_168_delivers_nothing_twice() -> None:
    run = hostile_scenario(168, "basic", token_timeout=detection_timeout("basic"))
    rows = Simulation(run.scenario, 168).run().events()
    assert checks.integrity(rows) == []
    assert any(
        r["kind"] == "drop" and r["detail"].get("reason") == "for an earlier boot" for r in rows
    )


def test_hostile_seed_168_without_basics_own_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with basic's own guard off (no message names its destination's
    boot): the reliable layer now refuses what was meant for A's and C's earlier boots
    (docs/protocols/raincore.md, decision 34), so nothing is delivered twice. Before
    that decision this is the run that found the defect: A delivered C:54 twice."""
    submit = BasicMachine._submit

    def blind(self: BasicMachine, event: Submit) -> list[Effect]:
        return [
            dataclasses.replace(e, msg=dataclasses.replace(e.msg, dst_epoch=0))
            if type(e) is Send and type(e.msg) is BasicData
            else e
            for e in submit(self, event)
        ]

    monkeypatch.setattr(BasicMachine, "_submit", blind)
    run = hostile_scenario(168, "basic", token_timeout=detection_timeout("basic"))
    rows = Simulation(run.scenario, 168).run().events()
    assert checks.integrity(rows) == []
    reasons = {r["detail"].get("reason") for r in rows if r["kind"] == "drop"}
    assert "for_an_earlier_incarnation" in reasons and "for an earlier boot" not in reasons
