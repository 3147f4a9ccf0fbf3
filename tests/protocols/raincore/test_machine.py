"""The Raincore machine driven directly (no simulator): the Raincore paper's eight events."""

from __future__ import annotations

from ringcast.core.effects import Deliver, InstallView, LockGranted, LockReleased, Send
from ringcast.core.events import (
    LockRelease,
    LockRequest,
    Received,
    SendFailed,
    Submit,
    TimerFired,
)
from ringcast.core.machine import MachineContext
from ringcast.protocols.raincore import SETTINGS, RaincoreMachine, RaincoreSettings
from ringcast.protocols.raincore._messages import (
    NINE11_SIGNATURE,
    TOKEN_SIGNATURE,
    Msg911,
    Status,
    Token,
)
from ringcast.protocols.raincore._state import TokenState, ViewState

from .harness import MS, Net


def views(net: Net, node: str) -> dict[int, tuple[str, ...]]:
    return {int(e.view.view_id): e.view.members for e in net.of_type(node, InstallView)}


def bare(node: str, members: tuple[str, ...], **settings: object) -> RaincoreMachine:
    s = {k: v.default for k, v in SETTINGS.items()}
    s.update(settings)
    return RaincoreMachine(MachineContext(node, members, members), RaincoreSettings.from_mapping(s))


def test_token_goes_round_with_increasing_sequence_numbers() -> None:
    net = Net(("A", "B", "C")).start().run(30)
    seqs = {n: [r["token_seq"] for r in net.records(n, "state")] for n in "ABC"}
    assert seqs["A"][:3] == [11, 14, 17]
    assert seqs["B"][:3] == [12, 15, 18]
    assert seqs["C"][:3] == [13, 16, 19]
    for n in "ABC":
        assert {r["view_state"] for r in net.records(n, "state")} == {"agreement"}
        assert views(net, n) == {1: ("A", "B", "C")}


def test_eating_node_drops_a_second_token() -> None:
    net = Net(("A", "B")).start()
    a = net.inner("A")
    assert a.token_state is TokenState.EATING
    copy = a.token.with_(sequence_number=99)
    net.feed("A", Received("B", copy))
    assert net.records("A", "token")[-1]["op"] == "dropped"
    assert a.last_token_seq == 11


def test_stale_token_is_dropped_by_sequence_number() -> None:
    net = Net(("A", "B")).start().run(8)
    b = net.inner("B")
    assert b.token_state is TokenState.HUNGRY
    stale = Token(TOKEN_SIGNATURE, b.last_token_seq, ("A", "B"), 0, 1, 1)
    net.feed("B", Received("A", stale))
    assert net.records("B", "token")[-1]["reason"] == "sequence number mis-match"
    assert b.token_state is TokenState.HUNGRY


def test_delivery_failure_removes_the_node_and_the_survivors_commit() -> None:
    net = Net(("A", "B", "C", "D")).start().run(5)
    net.crash("B")
    net.run(150)
    for n in "ACD":
        assert views(net, n) == {1: ("A", "B", "C", "D"), 2: ("A", "C", "D")}
        assert net.inner(n).last_global_view == ("A", "C", "D")
    states = [(r["view_state"], tuple(r["local_view"])) for r in net.records("A", "state")]
    acd = ("A", "C", "D")
    assert states[states.index(("chaos", acd)) :][:3] == [
        ("chaos", acd),
        ("reserve", acd),
        ("agreement", acd),
    ]


def test_single_node_left_commits_at_once() -> None:
    net = Net(("A", "B")).start().run(1)
    net.crash("B")
    net.run(60)
    a = net.inner("A")
    assert views(net, "A") == {1: ("A", "B"), 2: ("A",)}
    assert a.state == (TokenState.EATING, ViewState.AGREEMENT)
    sent_before = len(net.of_type("A", Send))
    net.run(100)
    assert a.token_state is TokenState.EATING  # "Restart EATING timeout", nothing to send to
    assert len(net.of_type("A", Send)) == sent_before


def test_lost_token_is_regenerated_once_by_the_holder_of_the_newest_copy() -> None:
    net = Net(("A", "B", "C", "D")).start().run(6.5)
    holder = next(n for n in "ABCD" if net.inner(n).token_state is TokenState.EATING)
    before = {n: net.inner(n).last_token_seq for n in "ABCD"}
    net.crash(holder)  # dies with the token: it acknowledged it, so no delivery failure
    net.run(400)
    survivors = [n for n in "ABCD" if n != holder]
    regens = [
        n for n in survivors if any(r["op"] == "regenerated" for r in net.records(n, "token"))
    ]
    newest = max(survivors, key=lambda n: (before[n], n))
    assert regens == [newest]
    ring = tuple(n for n in "ABCD" if n != holder)
    for n in survivors:
        assert set(net.inner(n).last_global_view) == set(ring)
    vetoes = [r for n in survivors for r in net.records(n, "911") if r.get("status") == "NO"]
    assert vetoes, "the other starving nodes' 911s were vetoed"


def _starving(node: str, seq: int) -> RaincoreMachine:
    m = bare(node, ("A", "B", "C"))
    m.token_state, m.view_state = TokenState.STARVING, ViewState.CHAOS
    m.last_token = Token(TOKEN_SIGNATURE, seq, ("A", "B", "C"), 0, 0, 1)
    return m


def _call(orig: str, seq: int) -> Msg911:
    route = {"A": ("A", "B", "C"), "C": ("C", "A", "B")}[orig]
    return Msg911(NINE11_SIGNATURE, route, 0, 1, 0, seq, Status.YES)


def test_911_veto_rule() -> None:
    # Older 911: vetoed with NO, straight back to its originator.
    m = _starving("B", 20)
    out = m.handle(Received("A", _call("A", 19)), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.dst == "A" and send.msg.status is Status.NO
    # Equally new, and B has a higher id than A: NO.
    out = _starving("B", 20).handle(Received("A", _call("A", 20)), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.msg.status is Status.NO
    # Equally new from C (higher id than B): passed on with YES to the next node.
    call = Msg911(NINE11_SIGNATURE, ("C", "A", "B"), 1, 2, 0, 20, Status.YES)
    out = _starving("B", 20).handle(Received("A", call), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.dst == "C" and send.msg.status is Status.YES
    # Newer: passed on.
    out = _starving("B", 20).handle(Received("A", _call("A", 21)), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.dst == "C" and send.msg.status is Status.YES


def test_node_holding_a_live_token_vetoes_and_own_yes_regenerates() -> None:
    hungry = _starving("B", 5)
    hungry.token_state = TokenState.HUNGRY
    out = hungry.handle(Received("A", _call("A", 50)), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.msg.status is Status.NO
    me = _starving("A", 30)
    back = Msg911(NINE11_SIGNATURE, ("A", "B", "C"), 2, 0, 0, 30, Status.YES)
    me.handle(Received("C", back), 0)
    assert me.token_state is TokenState.EATING and me.token is not None
    assert me.token.sequence_number > 30
    # A NO coming back changes nothing.
    other = _starving("A", 30)
    other.handle(Received("B", back.with_(status=Status.NO)), 0)
    assert other.token_state is TokenState.STARVING


def test_911_delivery_failure_skips_the_dead_node() -> None:
    m = _starving("A", 30)
    failed = Msg911(NINE11_SIGNATURE, ("A", "B", "C"), 0, 1, 0, 30, Status.YES)
    out = m.handle(SendFailed("B", failed), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.dst == "C" and send.msg.nodelist == ("A", "C")


def test_new_node_joins_through_a_911() -> None:
    net = Net(("A", "B", "C"))
    net.start().run(10)
    net.boot("E", joining=True)
    net.run(200)
    for n in "ABCE":
        assert set(net.inner(n).last_global_view) == {"A", "B", "C", "E"}
    assert any(r["node"] == "E" for n in "ABC" for r in net.records(n, "join_request"))


def test_a_node_in_no_group_rejects_a_911() -> None:
    lonely = bare("E", ())
    call = Msg911(NINE11_SIGNATURE, ("F", "E"), 1, 1, 0, 0, Status.YES)
    out = lonely.handle(Received("F", call), 0)
    (send,) = [e for e in out if type(e) is Send]
    assert send.dst == "F" and send.msg.status is Status.REJECT


def test_a_node_in_no_group_lets_a_regeneration_911_through() -> None:
    # Decision 3: E, in the universe but in no group, holds no token that could be
    # newer than a member's: it passes a regeneration 911 on (and a join request of a
    # node with no token either still gets REJECT).
    lonely = RaincoreMachine(
        MachineContext("E", ("A", "B", "C"), ("A", "B", "C", "E"), joining=True),
        RaincoreSettings.from_mapping({k: v.default for k, v in SETTINGS.items()}),
    )
    call = Msg911(NINE11_SIGNATURE, ("A", "B", "E", "C"), 2, 2, 0, 30, Status.YES)
    (send,) = [e for e in lonely.handle(Received("B", call), 0) if type(e) is Send]
    assert send.dst == "C" and send.msg.status is Status.YES
    join = Msg911(NINE11_SIGNATURE, ("A", "E"), 1, 1, 0, 0, Status.YES)
    (send,) = [e for e in lonely.handle(Received("A", join), 0) if type(e) is Send]
    assert send.dst == "A" and send.msg.status is Status.REJECT


def test_911_route_is_the_last_view_then_the_rest_of_the_universe() -> None:
    # Decision 4: A's lastGlobalView is (A, B) but the universe is {A, B, C}: its 911
    # goes on to C, where a majority (A, C) can still be found.
    a = _starving("A", 30)
    a.global_view[2] = ("A", "B")
    a.global_view_number = 2
    (send,) = [e for e in a.handle(TimerFired("rc:starving"), 0) if type(e) is Send]
    assert send.dst == "B" and send.msg.nodelist == ("A", "B", "C")


def test_starving_node_votes_on_a_911_from_outside_its_last_view() -> None:
    # C starved with lastGlobalView (A, B, C) while A and B committed (A, B): to A,
    # starving too, C is not in its last view. A still judges C's 911 by the token
    # numbers: a newer token is let through, an older one vetoed (and C is queued to
    # rejoin either way).
    for seq, status, dst in ((31, Status.YES, "B"), (29, Status.NO, "C")):
        a = _starving("A", 30)
        a.global_view[2] = ("A", "B")
        call = Msg911(NINE11_SIGNATURE, ("C", "A", "B"), 1, 1, 0, seq, Status.YES)
        (send,) = [e for e in a.handle(Received("C", call), 0) if type(e) is Send]
        assert send.dst == dst and send.msg.status is status
        assert a.new_nodes == ["C"]


def test_restarted_node_keeps_its_state_and_starves() -> None:
    net = Net(("A", "B", "C")).start().run(5)
    b = net.inner("B")
    seq, gv = b.last_token_seq, dict(b.global_view)
    net.crash("B")
    net.run(60)
    net.boot("B")
    b2 = net.inner("B")
    assert b2 is not b
    assert b2.state == (TokenState.STARVING, ViewState.CHAOS)
    assert b2.last_token_seq == seq and b2.global_view == gv
    net.run(300)
    for n in "ABC":
        assert set(net.inner(n).last_global_view) == {"A", "B", "C"}


def test_minority_side_never_commits_and_rejoins_after_heal() -> None:
    net = Net(("A", "B", "C", "D")).start().run(3)
    net.cut = {frozenset(("A", x)) for x in "BCD"}
    net.run(400)
    assert views(net, "A") == {1: ("A", "B", "C", "D")}
    assert net.inner("A").token_state is TokenState.STARVING
    for n in "BCD":
        assert net.inner(n).last_global_view == tuple(x for x in ("A", "B", "C", "D") if x != "A")
    net.cut = set()
    net.run(900)
    for n in "ABCD":
        assert set(net.inner(n).last_global_view) == set("ABCD")


def test_multicast_total_order_and_once_across_a_token_loss() -> None:
    net = Net(("A", "B", "C", "D")).start()
    k = 0
    for step in range(60):
        for n in "ABCD":
            if n in net.machines and step % 3 == 0:
                k += 1
                net.feed(n, Submit(f"{n}:{k}", b"x", "agreed"))
        if step == 20:
            holder = next(x for x in "ABCD" if net.inner(x).token_state is TokenState.EATING)
            net.crash(holder)
        net.run((step + 1) * 5)
    net.run(1200)
    live = [n for n in "ABCD" if n in net.machines]
    seqs = {n: [d.msg_id for d in net.of_type(n, Deliver)] for n in live}
    submitted_live = {f"{n}:{i}" for n in live for i in range(1, k + 1)} & {
        d.msg_id for n in live for d in net.of_type(n, Deliver)
    }
    for n in live:
        assert len(seqs[n]) == len(set(seqs[n]))
        assert seqs[n] == seqs[live[0]]
    own = [
        e.msg_id for n in live for _, e in net.effects[n] if type(e) is Deliver and e.sender == n
    ]
    assert set(own) <= set(seqs[live[0]])
    assert len(submitted_live) >= 30


def test_lock_granted_while_eating_held_up_to_the_bound() -> None:
    net = Net(("A", "B", "C"), {"lock_max_hold": 10 * MS}).start().run(1)
    net.feed("B", LockRequest())
    assert not net.of_type("B", LockGranted)
    net.run(4)
    assert net.of_type("B", LockGranted)
    b = net.inner("B")
    assert b.token_state is TokenState.EATING
    granted_at = next(t for t, e in net.effects["B"] if type(e) is LockGranted)
    net.run(30)
    released = [(t, e) for t, e in net.effects["B"] if type(e) is LockReleased]
    assert released and released[0][1].reason == "max_hold"
    assert released[0][0] - granted_at == 10 * MS
    # Released before the token left B.
    sent = [t for t, e in net.effects["B"] if type(e) is Send and e.dst == "C"]
    assert min(t for t in sent if t >= granted_at) >= released[0][0]


def test_lock_release_passes_the_token_and_one_holder_at_a_time() -> None:
    net = Net(("A", "B", "C"), {"lock_max_hold": 50 * MS}).start()
    for n in "ABC":
        net.feed(n, LockRequest())
    holders: list[tuple[int, str, str]] = []
    for step in range(1, 40):
        net.run(step)
        for n in "ABC":
            for t, e in net.effects[n]:
                if (
                    type(e) in (LockGranted, LockReleased)
                    and (t, n, type(e).__name__) not in holders
                ):
                    holders.append((t, n, type(e).__name__))
                    if type(e) is LockGranted:
                        net.feed(n, LockRelease())
    holders.sort()
    granted = [h for h in holders if h[2] == "LockGranted"]
    assert [g[1] for g in granted] == ["A", "B", "C"]
    held: set[str] = set()
    for _, n, kind in holders:
        if kind == "LockGranted":
            assert not held
            held.add(n)
        else:
            held.discard(n)
