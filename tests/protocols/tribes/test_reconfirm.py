"""Decision 18: a member that missed its view's confirmation gets it again.

A COORD_CONF that failed on delivery (the reliable layer gave up on a lossy link), or
arrived corrupted from a member gone bad, left its member in the view before: same
members, an older view id, for good (nothing re-elects a node whose view matches its
membership; the hostile garble soak, seed 25). Every beacon now names the view its
sender installed, and the coordinator sends its COORD_CONF again to a member of its
view whose beacon names an earlier view of the same coordinator.
"""

from __future__ import annotations

from ringcast.core.effects import Record, Send
from ringcast.core.events import Received
from ringcast.protocols.tribes import CoordConf, MemberBeacon
from ringcast.sim import Simulation, load_scenario


def coordinator_after_crash():  # type: ignore[no-untyped-def]
    res = Simulation(load_scenario("scenarios/tribes/crash.toml"), 1).run()
    a = res.machines["A"]
    assert a.upper.view_id == "A:2" and a.upper.my_conf.view_id == "A:2"
    return a, res.summary["simulated_ns"]


def test_a_member_whose_beacon_names_an_earlier_view_is_sent_the_confirmation() -> None:
    a, now = coordinator_after_crash()
    b = next(m for m in a.upper.view if m.node == "B")
    late = MemberBeacon(0, 0, b.incarnation, "A:1")
    out = a.handle(Received("B", late), now)
    assert any(type(e) is Record and e.fields.get("op") == "reconfirm" for e in out)
    # the conf itself travels through the reliable layer, to B
    confs = [e.msg.payload for e in out if type(e) is Send and e.dst == "B"]
    assert a.upper.my_conf in confs
    assert a.upper.reconfirmed == {"B": now}
    # at most once a member_drop_time
    again = a.handle(Received("B", late), now + 1)
    assert not any(type(e) is Record and e.fields.get("op") == "reconfirm" for e in again)


def test_a_member_in_this_view_or_in_another_leaders_is_left_alone() -> None:
    a, now = coordinator_after_crash()
    b = next(m for m in a.upper.view if m.node == "B")
    for view_id in ("A:2", "", "D:7", "A:9", "A:x"):
        out = a.handle(Received("B", MemberBeacon(0, 0, b.incarnation, view_id)), now)
        assert not any(type(e) is Record and e.fields.get("op") == "reconfirm" for e in out)
    # a beacon of another incarnation of B is not the member the view lists
    out = a.handle(Received("B", MemberBeacon(0, 0, b.incarnation + 1, "A:1")), now)
    assert not any(type(e) is Record and e.fields.get("op") == "reconfirm" for e in out)
    assert isinstance(a.upper.my_conf, CoordConf)
