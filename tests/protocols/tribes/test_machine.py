"""One machine fed by hand: the decisions of docs/protocols/tribes.md where Tomcat is
empty or gives up (retry on timeout, a lost COORD_CONF, the non-blocking probe, the
gone list, a reappearing member), and non-blocking multicast during an election."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import Deliver, InstallView, Send
from ringcast.core.events import Received, SendFailed, Start, Submit, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.core.units import MS
from ringcast.protocols.tribes import (
    SETTINGS,
    AppData,
    CoordAlive,
    CoordConf,
    CoordMember,
    CoordRequest,
    MemberBeacon,
    MemberShutdown,
    State,
    TribesMachine,
    TribesSettings,
)
from ringcast.protocols.tribes._membership import PROBE_FAILURES
from ringcast.protocols.tribes.machine import START_TIMER, WAIT_TIMER
from ringcast.sim import Simulation, parse_scenario


def _machine(me: str = "B", **kw: Any) -> TribesMachine:
    s = {k: v.default for k, v in SETTINGS.items()}
    s.update(kw)
    m = TribesMachine(MachineContext(me, (), ("A", "B", "C")), TribesSettings.from_mapping(s))
    m.handle(Start(), 0)
    return m


def _cm(n: str, inc: int = 1) -> CoordMember:
    return CoordMember(n, 0, inc)


def _silent(m: TribesMachine, now: int) -> list[Any]:
    """The beacon timer at ``now``: each member silent for member_drop_time is
    suspected and probed; its probes fail (PROBE_FAILURES in a row) and it is gone."""
    out = m.handle(TimerFired("tribes:beacon"), now)
    for k in range(PROBE_FAILURES):
        probes = _sends(out, CoordAlive)
        out = []
        for p in probes:
            out += m.handle(SendFailed(p.dst, p.msg), now + k + 1)
    return out


def _sends(out: list[Any], tp: type) -> list[Send]:
    return [e for e in out if isinstance(e, Send) and type(e.msg) is tp]


def _started(m: TribesMachine, *peers: str) -> list[Any]:
    for p in peers:
        m.handle(Received(p, MemberBeacon(0, 0, 1)), 1 * MS)
    return m.handle(TimerFired(START_TIMER), 120 * MS)


def test_a_waiting_non_leader_retries_instead_of_giving_up() -> None:
    m = _machine("B")
    _started(m, "A", "C")
    assert m.state is State.WAITING  # A is the leader: B waits for its token
    out = m.handle(TimerFired(WAIT_TIMER), 800 * MS)
    assert m.state is State.ELECTING
    (tok,) = _sends(out, CoordRequest)
    # forced: the token goes to the leader B knows of, who will take it over
    assert tok.dst == "A" and tok.msg.source == "B" and tok.msg.leader == "A"


def test_a_forwarder_that_never_gets_the_conf_elects_again() -> None:
    m = _machine("B")
    _started(m, "A", "C")
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B"), _cm("C")), ("A", "B", "C"))
    out = m.handle(Received("A", tok), 130 * MS)
    assert [s.dst for s in _sends(out, CoordRequest)] == ["C"]
    assert m.state is State.WAITING
    # the COORD_CONF never arrives: on the timeout B starts a forced election
    out = m.handle(TimerFired(WAIT_TIMER), 900 * MS)
    assert m.state is State.ELECTING and _sends(out, CoordRequest)[0].dst == "A"
    # ... and a COORD_CONF for the view ends it
    conf = CoordConf("A.1.1", "A:1", "A", (_cm("A"), _cm("B"), _cm("C")))
    out = m.handle(Received("A", conf), 901 * MS)
    assert m.state is State.IDLE and any(isinstance(e, InstallView) for e in out)
    assert m.getCoordinator() == "A" and m.getView() == ("A", "B", "C")


def test_a_source_whose_token_never_returns_starts_a_new_one() -> None:
    m = _machine("A")
    _started(m, "B", "C")
    first = m.suggested_view_id
    assert m.state is State.ELECTING and first is not None
    out = m.handle(TimerFired(WAIT_TIMER), 900 * MS)
    assert m.state is State.ELECTING and m.suggested_view_id not in (None, first)
    # the lost token turning up late is stale and dropped
    late = CoordRequest(first, "A", "A", (_cm("A"), _cm("B"), _cm("C")), ("A", "B", "C"))
    out = m.handle(Received("C", late), 901 * MS)
    assert [getattr(e, "kind", None) for e in out] == ["drop"]
    assert _sends(out, CoordConf) == []


def test_an_unknown_member_is_probed_without_blocking_and_dropped_if_dead() -> None:
    m = _machine("B")
    _started(m, "A")
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B"), _cm("D")), ("A", "B", "D"))
    out = m.handle(Received("A", tok), 130 * MS)
    # the token goes on at once, and D (new to B) is probed in the background
    assert [s.dst for s in _sends(out, CoordRequest)] == ["D"]
    (probe,) = _sends(out, CoordAlive)
    assert probe.dst == "D" and "D" in m.membership
    out = m.handle(SendFailed("D", probe.msg), 300 * MS)
    (again,) = _sends(out, CoordAlive)  # probed once more before it is let go
    assert again.dst == "D" and "D" in m.membership
    m.handle(SendFailed("D", again.msg), 400 * MS)
    assert "D" not in m.membership


def test_a_member_seen_gone_is_struck_and_reported_gone() -> None:
    m = _machine("B")
    _started(m, "A", "C")
    m.handle(Received("A", MemberBeacon(0, 0, 1)), 390 * MS)
    _silent(m, 400 * MS)  # C silent since 1 ms, its probes failing: gone
    assert m.membership.names() == {"A"}
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B"), _cm("C")), ("A", "B", "C"))
    out = m.handle(Received("A", tok), 401 * MS)
    (fwd,) = _sends(out, CoordRequest)
    # C is struck and reported gone; with nobody after B on the route the token
    # goes back to its leader
    assert [x.node for x in fwd.msg.members] == ["A", "B"] and fwd.dst == "A"
    assert [g.node for g in fwd.msg.gone] == ["C"]


def test_direct_evidence_wins_over_a_gone_report() -> None:
    m = _machine("B")
    _started(m, "A", "C")
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B")), ("A", "B", "C"), (_cm("C"),))
    out = m.handle(Received("A", tok), 130 * MS)
    (fwd,) = _sends(out, CoordRequest)
    assert [x.node for x in fwd.msg.members] == ["A", "B", "C"] and fwd.msg.gone == ()


def test_a_member_restarting_with_a_new_incarnation_replaces_its_old_self() -> None:
    m = _machine("A")
    _started(m, "B")
    m.handle(Received("B", MemberBeacon(0, 500, 2)), 200 * MS)
    assert m.membership.members["B"].incarnation == 2
    out = m.handle(Received("B", MemberBeacon(0, 0, 1)), 201 * MS)
    assert out == [] and m.membership.members["B"].incarnation == 2  # a late old beacon


def test_application_messages_flow_during_an_election() -> None:
    m = _machine("A")
    _started(m, "B", "C")
    assert m.state is State.ELECTING
    out = m.handle(Submit("A:1", b"x", "fifo"), 121 * MS)
    assert sorted(s.dst for s in _sends(out, AppData)) == ["B", "C"]
    assert any(isinstance(e, Deliver) for e in out)


def test_deliveries_continue_while_a_crash_is_being_elected() -> None:
    sc = parse_scenario(
        {
            "protocol": "tribes",
            "nodes": ["A", "B", "C", "D", "E", "F", "G", "H"],
            "duration": "1.5s",
            "network": {"latency": "2ms"},
            "workload": [{"rate": 1000, "order": "fifo", "size": 10}],
            "nemesis": [{"at": "800ms", "action": "crash", "node": "A"}],
        }
    )
    res = Simulation(sc, seed=1).run()
    t0 = min(
        r["t"]
        for r in res.events(kind="coord")
        if r["t"] > 800 * MS and r["detail"]["op"] == "request"
    )
    t1 = max(r["t"] for r in res.events(kind="view"))
    assert t1 - t0 > 10 * MS  # the election takes a while: rounds of 2 ms hops
    during = [r for r in res.events(kind="deliver") if t0 < r["t"] < t1]
    assert len(during) > 100


def test_a_graceful_leave_is_announced_and_seen_at_once() -> None:
    sc = parse_scenario(
        {
            "protocol": "tribes",
            "nodes": ["A", "B", "C"],
            "duration": "1s",
            "nemesis": [{"at": "500ms", "action": "leave", "node": "A"}],
        }
    )
    res = Simulation(sc, seed=1).run()
    last = {r["node"]: (r["view"], tuple(r["members"]), r["t"]) for r in res.events(kind="view")}
    assert last["B"][:2] == last["C"][:2] == ("B:1", ("B", "C"))
    assert last["B"][2] < 510 * MS  # not after the drop time (250 ms)


def test_a_beacon_overtaken_by_the_shutdown_does_not_bring_the_member_back() -> None:
    m = _machine("B")
    _started(m, "A", "C")
    m.handle(Received("A", MemberShutdown(1)), 200 * MS)
    assert "A" not in m.membership
    assert m.handle(Received("A", MemberBeacon(0, 0, 1)), 201 * MS) == []
    assert "A" not in m.membership
    m.handle(Received("A", MemberBeacon(0, 300, 2)), 400 * MS)  # restarted: welcome back
    assert m.membership.members["A"].incarnation == 2


def test_a_hearsay_member_is_probed_again_and_lost_when_cut_off() -> None:
    m = _machine("C")
    m.handle(TimerFired(START_TIMER), 120 * MS)  # alone: a view of C
    tok = CoordRequest("A.1.1", "A", "A", (_cm("A"), _cm("B"), _cm("C")), ("A", "B", "C"))
    out = m.handle(Received("B", tok), 130 * MS)
    assert sorted(p.dst for p in _sends(out, CoordAlive)) == ["A", "B"]  # learnt: probed
    m.handle(Received("A", CoordConf("A.1.1", "A:1", "A", tok.members)), 131 * MS)
    assert m.getView() == ("A", "B", "C")
    # cut off before any beacon of A or B arrived: no beacon, token or view reaches C.
    # The first probes succeeded; a hearsay member is probed again after member_drop_time
    out = m.handle(TimerFired("tribes:beacon"), 300 * MS)
    assert _sends(out, CoordAlive) == []
    out = m.handle(TimerFired("tribes:beacon"), 380 * MS)
    probes = _sends(out, CoordAlive)
    assert sorted(p.dst for p in probes) == ["A", "B"]
    assert _sends(m.handle(TimerFired("tribes:beacon"), 430 * MS), CoordAlive) == []
    for _ in range(PROBE_FAILURES):
        out = []
        for p in probes:
            out += m.handle(SendFailed(p.dst, p.msg), 480 * MS)
        probes = _sends(out, CoordAlive)
    assert m.getView() == ("C",) and m.getCoordinator() == "C"


def test_a_node_partitioned_before_hearing_a_beacon_installs_a_view_of_itself() -> None:
    # C restarts at 625 ms, between A's and B's beacons (every 50 ms from 0): it learns
    # them from the election's token (hearsay) and is cut off at 631 ms, before their
    # next beacon. It used to keep the view of three for ever.
    sc = parse_scenario(
        {
            "protocol": "tribes",
            "nodes": ["A", "B", "C"],
            "duration": "2s",
            "network": {"latency": "1ms"},
            "nemesis": [
                {"at": "100ms", "action": "crash", "node": "C"},
                {"at": "625ms", "action": "restart", "node": "C"},
                {"at": "631ms", "action": "partition", "groups": [["A", "B"], ["C"]]},
            ],
        }
    )
    res = Simulation(sc, seed=1).run()
    added = [
        r["detail"]
        for r in res.events(kind="coord")
        if r["node"] == "C" and 625 * MS < r["t"] < 631 * MS and r["detail"]["op"] == "memberAdded"
    ]
    assert added and all(d.get("hearsay") for d in added)
    views = [(r["t"], tuple(r["members"])) for r in res.events(kind="view") if r["node"] == "C"]
    assert views[-2][1] == ("A", "B", "C") and views[-2][0] < 631 * MS
    # its probes of A and B fail twice each (member_drop_time, then two probes)
    assert views[-1][1] == ("C",) and views[-1][0] < 1200 * MS


def test_a_confirmed_view_vouches_for_a_member_this_node_saw_disappear() -> None:
    m = _machine("C")
    _started(m, "A", "B")
    _silent(m, 400 * MS)  # A and B silent since 1 ms, their probes failing: gone
    assert m.getView() == ("C",) and m.membership.names() == set()
    # the partition heals; A's round went on without C hearing a beacon yet
    conf = CoordConf("A.1.5", "A:5", "A", (_cm("A"), _cm("B"), _cm("C")))
    out = m.handle(Received("A", conf), 410 * MS)
    assert m.getView() == ("A", "B", "C") and m.state is State.IDLE
    assert m.membership.names() == {"A", "B"}
    assert sorted(p.dst for p in _sends(out, CoordAlive)) == ["A", "B"]
    # no view of C alone right after (it used to elect itself at once)
    assert [e for e in out if isinstance(e, InstallView)] == [out[0]]
    assert _sends(out, CoordRequest) == []


def test_a_confirmed_view_does_not_bring_back_a_member_that_left() -> None:
    m = _machine("C")
    _started(m, "A", "B")
    m.handle(Received("B", MemberShutdown(1)), 200 * MS)
    conf = CoordConf("A.1.5", "A:5", "A", (_cm("A"), _cm("B"), _cm("C")))
    m.handle(Received("A", conf), 210 * MS)
    assert "B" not in m.membership


def test_a_confirmed_view_does_not_bring_back_an_older_incarnation() -> None:
    m = _machine("C")
    _started(m, "A", "B")
    m.handle(Received("B", MemberBeacon(0, 300, 2)), 200 * MS)  # B restarted: 1 is gone
    _silent(m, 500 * MS)  # and B (2) falls silent, its probes failing: gone too
    assert m.membership.departed["B"] == 2
    conf = CoordConf("A.1.5", "A:5", "A", (_cm("A"), _cm("B", 1), _cm("C")))
    m.handle(Received("A", conf), 510 * MS)
    assert "B" not in m.membership


def test_the_node_a_token_comes_from_is_alive_even_if_seen_gone() -> None:
    # B was paused past member_drop_time: on resuming it finds A and C silent (gone),
    # then A's token. It used to strike A (and C), take the token over alone and
    # confirm a view of itself at once (waiting -> idle, a transition not in the table,
    # hostile seed 832).
    m = _machine("B")
    _started(m, "A", "C")
    _silent(m, 400 * MS)
    assert m.membership.names() == set()
    tok = CoordRequest("A.1.3", "A", "A", (_cm("A"), _cm("B"), _cm("C")), ("A", "B", "C"))
    out = m.handle(Received("A", tok), 401 * MS)
    assert "A" in m.membership and "C" not in m.membership
    (fwd,) = _sends(out, CoordRequest)
    assert [x.node for x in fwd.msg.members] == ["A", "B"] and fwd.dst == "A"
    assert [g.node for g in fwd.msg.gone] == ["C"]
    assert [p.dst for p in _sends(out, CoordAlive)] == ["A"]
    assert not [e for e in out if isinstance(e, InstallView)] and m.state is State.WAITING


def test_a_bogus_incarnation_shuts_a_beaconing_member_out_for_member_drop_time_only() -> None:
    """A beacon naming an incarnation its member never had (corrupted, or a member that
    lost its stable storage and counts again from 1): while the named one is heard, the
    member's own beacons are late ones of an older incarnation; once it has been silent
    for member_drop_time, the member is alive again as the incarnation it beacons."""
    m = _machine("C")
    _started(m, "A", "B")
    m.handle(Received("B", MemberBeacon(0, 0, 2**62)), 200 * MS)
    assert m.membership.members["B"].incarnation == 2**62
    drop = m.settings.member_drop_time
    t = 200 * MS + 50 * MS
    while t < 200 * MS + drop:  # B's own beacons (incarnation 1), every 50 ms
        m.handle(Received("B", MemberBeacon(0, 0, 1)), t)
        assert m.membership.members["B"].incarnation == 2**62
        t += 50 * MS
    m.handle(Received("B", MemberBeacon(0, 0, 1)), 200 * MS + drop)
    assert m.membership.members["B"].incarnation == 1 and m.membership.members["B"].direct


def test_a_bogus_shutdown_keeps_beacons_out_for_member_drop_time_only() -> None:
    m = _machine("C")
    _started(m, "A", "B")
    m.handle(Received("B", MemberShutdown(2**62)), 200 * MS)
    assert "B" not in m.membership
    m.handle(Received("B", MemberBeacon(0, 0, 1)), 250 * MS)  # overtaken by the shutdown?
    assert "B" not in m.membership
    m.handle(Received("B", MemberBeacon(0, 0, 1)), 200 * MS + m.settings.member_drop_time)
    assert "B" in m.membership


def test_a_token_does_not_replace_a_member_heard_directly_with_a_higher_incarnation() -> None:
    m = _machine("C")
    _started(m, "A", "B")
    m.handle(Received("B", MemberBeacon(0, 0, 1)), 150 * MS)
    assert not m.membership.learn(_cm("B", 7), 160 * MS)
    assert m.membership.members["B"].incarnation == 1 and m.membership.members["B"].direct


def test_an_idle_node_whose_view_lacks_members_it_hears_elects_again() -> None:
    """Tribes' heartbeat(): B hears A and C, but its view is of itself alone (its token
    sends failed while their links were down; A and C never saw B go, so none of them
    starts an election). After member_drop_time B starts one; while the difference
    lasts, the next one waits twice as long."""
    m = _machine("B")
    _started(m, "A", "C")
    m.view, m.state = (_cm("B"),), State.IDLE  # as a round whose sends all failed left it
    drop = m.settings.member_drop_time
    beat = m.settings.heartbeat_interval

    def tick(t: int) -> list[Any]:
        for p in "AC":
            m.handle(Received(p, MemberBeacon(0, 0, 1)), t)
        return m.handle(TimerFired("tribes:beacon"), t)

    t = 200 * MS
    heartbeats = []
    while t < 200 * MS + 8 * drop:
        out = tick(t)
        if any(getattr(e, "fields", {}).get("op") == "heartbeat" for e in out):
            heartbeats.append(t)
            assert m.state is State.WAITING  # A leads: B waits for its token, then forces
            m.state = State.IDLE  # the round failed again: the view is still B's alone
        t += beat
    first, second, third = heartbeats[:3]
    assert first - 200 * MS >= drop
    assert second - first >= 2 * drop and third - second >= 4 * drop
