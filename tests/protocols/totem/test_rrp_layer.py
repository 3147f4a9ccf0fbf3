"""The redundant-ring layer on its own: sending per replication style, duplicates,
bad packets, status, and the factory's choice between the plain machine and the stack."""

from __future__ import annotations

from typing import Any

import pytest

from ringcast.core.codec import decode, encode
from ringcast.core.effects import Multicast, Record, Send, SetTimer, StateChanged
from ringcast.core.events import Received, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.layers import Stack
from ringcast.protocols.totem import SPEC, TotemMachine
from ringcast.protocols.totem._messages import Join, Mcast, RingId, Token
from ringcast.protocols.totem._rrp_messages import RingTest, RrpPacket
from ringcast.protocols.totem.rrp import RedundantRing, RrpSettings

RING = RingId(1, "A")
TOKEN = Token(RING, 1, 0, 0, "", (), 0, 0)
FRAME = Mcast(RING, 1, "A", False, ())


def make(mode: str, networks: int = 2, **settings: Any) -> RedundantRing:
    s = SPEC.resolve_settings({"rrp_mode": mode, **settings})
    return RedundantRing("A", networks, RrpSettings(s, networks), epoch=7, peers=("A", "B", "C"))


def nets(effects: list[Any]) -> list[int]:
    return [e.network for e in effects if type(e) in (Send, Multicast)]


def test_active_sends_every_packet_on_every_network() -> None:
    lay = make("active")
    _, down = lay.down(Send("B", TOKEN), 0)
    assert nets(down) == [0, 1]
    assert len({e.msg for e in down}) == 1  # the same envelope: one packet, two copies
    _, down = lay.down(Multicast(FRAME), 0)
    assert nets(down) == [0, 1]


def test_passive_alternates_tokens_and_frames_apart() -> None:
    lay = make("passive")
    tokens = [nets(lay.down(Send("B", Token(RING, i, 0, 0, "", (), 0, 0)), 0)[1]) for i in range(4)]
    frames = [nets(lay.down(Multicast(FRAME), 0)[1]) for _ in range(4)]
    assert tokens == [[0], [1], [0], [1]]
    assert frames == [[0], [1], [0], [1]]


def test_active_passive_sends_k_of_n_in_turn() -> None:
    lay = make("active_passive", networks=3, rrp_copies=2)
    got = [nets(lay.down(Multicast(FRAME), 0)[1]) for _ in range(3)]
    assert got == [[0, 1], [1, 2], [2, 0]]


def test_a_resent_token_and_joins_go_on_every_network() -> None:
    lay = make("passive")
    assert nets(lay.down(Send("B", TOKEN), 0)[1]) == [0]
    assert nets(lay.down(Send("B", TOKEN), 0)[1]) == [0, 1]  # sent again: all networks
    assert nets(lay.down(Multicast(Join("A", 1, ("A",), ())), 0)[1]) == [0, 1]


def test_first_copy_taken_others_dropped() -> None:
    lay = make("active")
    pkt = RrpPacket(99, 1, FRAME)
    up, _ = lay.up(Received("B", pkt, 1), 0)
    assert up == [Received("B", FRAME, 1)]
    up, _ = lay.up(Received("B", pkt, 0), 0)
    assert up == []
    assert lay.counters["duplicates"] == 1
    # a restarted sender (new epoch) starts its counter again: not a duplicate
    up, _ = lay.up(Received("B", RrpPacket(100, 1, FRAME), 0), 0)
    assert up == [Received("B", FRAME, 0)]


def test_unknown_network_is_a_drop_and_a_counter_never_a_crash() -> None:
    lay = make("active")
    up, down = lay.up(Received("B", RrpPacket(1, 1, FRAME), 5), 0)
    assert up == []
    assert [type(e) for e in down] == [Record]
    assert down[0].kind == "drop" and down[0].fields["network"] == "5"
    assert lay.counters["unknown_network"] == 1


@pytest.mark.parametrize(
    "msg",
    [RrpPacket(1, 0, FRAME), RrpPacket("x", 1, FRAME), RingTest("B", 0, 1, False, 0)],  # type: ignore[arg-type]
)
def test_malformed_packets_dropped(msg: Any) -> None:
    lay = make("active")
    up, down = lay.up(Received("B", msg, 1), 0)  # the ring test names network 0, came on 1
    assert up == [] and down and down[0].kind == "drop"
    assert lay.counters["malformed"] == 1


def test_active_marks_faulty_at_the_threshold_and_sends_on_the_rest() -> None:
    lay = make("active", rrp_problem_count_threshold=3)
    lay.successor = "B"
    now = 0
    effects: list[Any] = []
    for i in range(1, 4):
        effects += lay.up(Received("C", RrpPacket(5, i, TOKEN), 0), now)[1]
        now += 50_000_000
        effects += lay.timer("rrp:token", now)[1]
    assert lay.faulty == [False, True]
    fault = [e for e in effects if type(e) is Record and e.kind == "fault"]
    assert fault[0].fields["action"] == "network_faulty" and fault[0].fields["network"] == 1
    state = [e for e in effects if type(e) is StateChanged][-1]
    assert state.fields["rrp_net1"] == "faulty"
    assert SetTimer("rrp:probe:1", 1_000_000_000) in effects
    assert nets(lay.down(Multicast(FRAME), now)[1]) == [0]


def test_every_network_faulty_sends_on_all() -> None:
    lay = make("passive")
    lay.faulty = [True, True]
    assert nets(lay.down(Multicast(FRAME), 0)[1]) == [0, 1]


def probe_round(lay: RedundantRing, k: int, now: int) -> list[Send]:
    return [e for e in lay.timer(f"rrp:probe:{k}", now)[1] if type(e) is Send]


def test_probe_round_goes_round_then_readmits_everywhere() -> None:
    a = make("active", rrp_readmit_probes=3)
    a.successor = "B"
    a.faulty = [False, True]
    probes = probe_round(a, 1, 0)
    assert len(probes) == 3  # one round: rrp_readmit_probes probes
    for probe in probes:
        assert probe.network == 1 and probe.dst == "B" and type(probe.msg) is RingTest
    # B forwards them round the ring; they come back to A on network 1
    for probe in probes[:2]:
        _, down = a.up(Received("D", probe.msg, 1), 1)
        assert a.faulty == [False, True]  # not before the whole round is back
    _, down = a.up(Received("D", probes[2].msg, 1), 1)
    assert a.faulty == [False, False]
    activate = next(e for e in down if type(e) is Send)
    assert activate.msg.activate and activate.network == 1
    b = RedundantRing("B", 2, a.cfg, epoch=1, peers=("A", "B", "C"))
    b.successor = "C"
    b.faulty = [False, True]
    _, down = b.up(Received("A", activate.msg, 1), 2)
    assert b.faulty == [False, False]
    assert any(type(e) is Send and e.dst == "C" for e in down)


def test_a_round_missing_one_probe_never_readmits() -> None:
    """A lossy network loses some probe of every round: the next round starts afresh,
    and the probes of the failed one count for nothing."""
    a = make("passive", rrp_readmit_probes=3)
    a.successor = "B"
    a.faulty = [False, True]
    first = probe_round(a, 1, 0)
    for probe in first[:2]:
        a.up(Received("D", probe.msg, 1), 1)
    second = probe_round(a, 1, 1_000_000_000)
    for probe in [first[2], *second[:2]]:  # late, and two of three
        a.up(Received("D", probe.msg, 1), 1_000_000_001)
    assert a.faulty == [False, True]
    a.up(Received("D", second[2].msg, 1), 1_000_000_002)
    assert a.faulty == [False, False]


def test_readmission_backs_off_after_a_relapse() -> None:
    """Faulty again within rrp_flap_window of a re-admission: probe rounds half as
    often with twice the probes, up to eight times; a network that stayed healthy for
    the window starts again from one interval and rrp_readmit_probes."""
    a = make("active", rrp_readmit_probes=2)
    a.successor = "B"
    sec = 1_000_000_000
    now = 0
    expected = [(1, 2), (2, 4), (4, 8), (8, 16), (8, 16)]
    for every, probes in expected:
        down: list[Any] = []
        a._mark_faulty(1, now, down, reason="test")
        assert SetTimer("rrp:probe:1", every * sec) in down
        assert faults(down)[0].fields["probes_needed"] == probes
        sent = probe_round(a, 1, now)
        assert len(sent) == probes
        for probe in sent:
            a.up(Received("D", probe.msg, 1), now + 1)
        assert a.faulty == [False, False]
        now += sec  # relapses a second after each re-admission
    down = []
    a._mark_faulty(1, now + 10 * sec, down, reason="test")  # healthy for the window
    assert SetTimer("rrp:probe:1", sec) in down
    assert faults(down)[0].fields["probes_needed"] == 2


def test_wire_messages_round_trip() -> None:
    for msg in (RrpPacket(3, 9, FRAME), RingTest("A", 1, 4, True, 2)):
        assert decode(encode(msg, sender="A")).msg == msg


def test_status_rides_on_the_single_rings_state() -> None:
    lay = make("active")
    _, down = lay.down(StateChanged.of(state="operational"), 0)
    assert down == [
        StateChanged.of(
            state="operational", rrp_mode="active", rrp_net0="healthy", rrp_net1="healthy"
        )
    ]


def ctx(**settings: Any) -> MachineContext:
    return MachineContext("A", ("A", "B"), ("A", "B"), settings=settings, networks=2, seed=3)


def test_factory_plain_machine_without_rrp_and_a_stack_with_it() -> None:
    assert type(SPEC.factory(ctx())) is TotemMachine
    m = SPEC.factory(ctx(rrp_mode="passive"))
    assert type(m) is Stack and m.layer(RedundantRing) is not None
    timers = [e for e in m.handle(TimerFired("rrp:nothing"), 0)]
    assert timers == []


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"rrp_mode": "activ"}, "rrp_mode"),
        ({"rrp_mode": "active_passive", "rrp_copies": 2}, "rrp_copies"),
    ],
)
def test_bad_settings_named(settings: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        SPEC.factory(ctx(**settings))


def test_a_silent_network_is_faulty_only_while_the_others_carry_packets() -> None:
    lay = make("passive")
    for i in range(1, 50):  # a few dozen read from one socket while the other waits: no
        lay.up(Received("B", RrpPacket(3, i, FRAME), 0), 0)
    assert not [e for e in lay.timer("rrp:silence", 260_000_000)[1] if type(e) is Record]
    lay = make("passive")
    assert lay.start(0) == [SetTimer("rrp:silence", 125_000_000)]
    # both networks silent (a paused process, an idle host): nothing is blamed
    assert not [e for e in lay.timer("rrp:silence", 300_000_000)[1] if type(e) is Record]
    # network 0 carries a hundred packets, network 1 nothing for 250 ms: faulty
    for i in range(1, 101):
        lay.up(Received("B", RrpPacket(4, i, FRAME), 0), 300_000_000 + i)
    down = lay.timer("rrp:silence", 310_000_000)[1]
    faults = [e for e in down if type(e) is Record and e.kind == "fault"]
    assert lay.faulty == [False, True]
    assert faults[0].fields["reason"] == "silent" and faults[0].fields["network"] == 1


def faults(effects: list[Any]) -> list[Record]:
    return [e for e in effects if type(e) is Record and e.kind == "fault"]


def test_passive_network_without_a_token_in_its_turn_is_faulty_after_two_looks() -> None:
    ms = 1_000_000
    lay = make("passive")
    # healthy: the predecessor's tokens alternate, slow or not (an idle ring): nothing
    for i in range(1, 9):
        down = lay.up(Received("C", RrpPacket(5, i, TOKEN), i % 2), i * 400 * ms)[1]
        assert not [e for e in down if type(e) is SetTimer]
    # network 1 dead: its turn's token is sent again on every network and arrives on 0
    now = 3_500 * ms
    down = lay.up(Received("C", RrpPacket(5, 9, TOKEN), 0), now)[1]
    assert SetTimer("rrp:confirm:1", 1 * ms) in down
    assert not faults(down)
    assert not faults(lay.timer("rrp:confirm:1", now + ms)[1])  # first look: wait once more
    down = lay.timer("rrp:confirm:1", now + 2 * ms)[1]
    assert lay.faulty == [False, True]
    assert faults(down)[0].fields["reason"] == "no token in its turns"
    assert faults(down)[0].fields["tokens"] == 2


def test_passive_suspicion_cleared_by_a_packet_read_late_from_the_other_socket() -> None:
    ms = 1_000_000
    lay = make("passive")
    lay.up(Received("C", RrpPacket(5, 1, TOKEN), 1), 0)
    lay.up(Received("C", RrpPacket(5, 2, TOKEN), 0), 100 * ms)
    down = lay.up(Received("C", RrpPacket(5, 3, TOKEN), 0), 400 * ms)[1]
    assert SetTimer("rrp:confirm:1", 1 * ms) in down
    lay.timer("rrp:confirm:1", 401 * ms)
    # the copy on network 1 was waiting in its socket behind a batch from network 0
    lay.up(Received("C", RrpPacket(5, 3, TOKEN), 1), 401 * ms)
    assert not faults(lay.timer("rrp:confirm:1", 402 * ms)[1])
    assert lay.faulty == [False, False]


def test_passive_token_rule_needs_silence_and_can_be_switched_off() -> None:
    ms = 1_000_000
    lay = make("passive")
    lay.up(Received("C", RrpPacket(5, 1, TOKEN), 1), 0)
    lay.up(Received("C", RrpPacket(5, 2, TOKEN), 0), 10 * ms)
    lay.up(Received("B", RrpPacket(6, 1, FRAME), 1), 20 * ms)  # frames still on network 1
    down = lay.up(Received("C", RrpPacket(5, 3, TOKEN), 0), 260 * ms)[1]
    assert not [e for e in down if type(e) is SetTimer]
    off = make("passive", rrp_token_turns=0)
    for i, t in ((1, 0), (2, 300), (3, 600), (4, 900)):
        down = off.up(Received("C", RrpPacket(5, i, TOKEN), 0), t * ms)[1]
        assert not [e for e in down if type(e) is SetTimer and "confirm" in e.name]
    # three networks, active_passive K = 2: one turn is two tokens (N - K + 1)
    assert make("active_passive", networks=3, rrp_copies=2).cfg.token_window == 2
    assert make("passive", networks=3).cfg.token_window == 3
