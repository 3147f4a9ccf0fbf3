"""Merges are all or nothing (merge_atomicity, by its plain-Python reference): the
bundled partition scenarios, one regression scenario per defect class fixed, and the
planted bug of the lab's tests caught by the reference too."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from ringcast.lab import reference as checks
from ringcast.lab.liveness import convergence

from .harness import run

FIVE = set("ABCDE")


@pytest.mark.parametrize("seed", range(1, 21))
def test_partition_merge_is_one_merge_of_everyone(seed: int) -> None:
    """3 / 2 split and heal, the failure guarded against: 16 of these 20 seeds merging in
    pieces (seed 1 leaving E behind, seed 4 installing the overlapping A:4 {A,B,C,E} and
    D:4 {B,C,D,E})."""
    rows = run("partition_merge", "two_phase", seed=seed)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert checks.convergence(rows, FIVE) == []
    (merge,) = checks.records(rows, "merge")
    assert sorted(m for g in merge["detail"]["subgroups"] for m in g["members"]) == sorted(FIVE)


@pytest.mark.parametrize("mode", ["two_phase", "acks"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_merge_takes_the_whole_of_every_subgroup(mode: str, seed: int) -> None:
    """regress_partial_merge: A never hears E's INFO, yet merges all of D's view, E
    included (it merged D alone before, leaving E in D:2 for ever)."""
    rows = run("regress_partial_merge", mode, seed=seed)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert checks.convergence(rows, FIVE) == []
    merges = checks.records(rows, "merge", "A")
    assert merges
    assert "E" in {m for g in merges[0]["detail"]["subgroups"] for m in g["members"]}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_leaders_never_install_overlapping_merges(seed: int) -> None:
    """regress_overlapping_merges: A and D never hear each other's INFO, each leads a
    merge; the failure guarded against: A:4 {A,B,C,E} and D:4 {B,C,D,E} (seed 1) both
    installed."""
    rows = run("regress_overlapping_merges", "two_phase", seed=seed)
    assert {r["node"] for r in checks.records(rows, "merge_start")} >= {"A", "D"}
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert checks.convergence(rows, FIVE) == []


def test_the_reference_names_each_defect() -> None:
    """The reference's three clauses on small hand-made runs."""

    def view(node: str, t: int, v: str, members: str) -> dict:
        return {"kind": "view", "node": node, "t": t, "i": t, "view": v, "members": list(members)}

    base = [view(n, 0, "A:1", "ABC") for n in "ABC"] + [view(n, 0, "D:1", "DE") for n in "DE"]
    partial = base + [view(n, 10, "A:2", "ABCD") for n in "ABCD"]
    (msg,) = checks.merge_atomicity(partial)
    assert msg.startswith("partial merge: ") and "without E" in msg and "D:1" in msg
    whole = base + [view(n, 10, "A:2", "ABCDE") for n in "ABCDE"]
    assert checks.merge_atomicity(whole) == []
    overlap = base + [view(n, 10, "A:2", "ABCE") for n in "AE"]
    overlap += [view(n, 11, "D:2", "BCDE") for n in "BCD"]
    assert any(m.startswith("overlapping merges: A:2") for m in checks.merge_atomicity(overlap))
    # an exclusion inside one of its sources is not a merge, whoever missed what
    exclusion = base + [view(n, 10, "A:2", "AB") for n in "AB"]
    assert checks.merge_atomicity(exclusion) == []


LAB_TESTS = Path(__file__).resolve().parents[2] / "lab"


@pytest.mark.parametrize("seed", [1, 2])
def test_the_planted_first_coordinator_bug_is_caught(seed: int) -> None:
    """The lab's planted bug (``lab_buggy.register_gms_first_coord``: the merge leader
    merges the first subgroup that answers and no other) on 8 members in 4 partitions:
    a partial merge after the heal; the same scenario by GMS holds."""
    sys.path.insert(0, str(LAB_TESTS))
    try:
        import lab_buggy
    finally:
        sys.path.remove(str(LAB_TESTS))
    from ringcast.sim import Simulation, load_scenario

    lab_buggy.register_gms_first_coord()
    path = Path(__file__).resolve().parents[3] / "scenarios/gms/jgroups/split_8_into_4.toml"
    sc = load_scenario(path)
    good = Simulation(sc, seed=seed).run().events()
    assert checks.merge_atomicity(good) == []
    buggy = dataclasses.replace(sc, protocol=lab_buggy.GMS_FIRST_COORD)
    bad = Simulation(buggy, seed=seed).run().events()
    found = checks.merge_atomicity(bad)
    assert found and all(m.startswith("partial merge after the heal") for m in found)


def test_a_member_prepares_no_view_that_would_split_its_group() -> None:
    """B, in A:1 = {A, B, C}, refuses to prepare D's view {D, B} (a JOIN answered after
    B got into A's view, say: it would take B out and leave A and C behind, hostile seed
    57), and prepares D's merge view that takes all of A:1, or one without a member B
    suspects; a view that takes all of A:1 but is no merge view (a JOIN answered late:
    hostile seed 1197, D's singleton joined to A alone) it refuses too."""
    from ringcast.core.effects import Record, Send
    from ringcast.core.events import Received, Start
    from ringcast.core.machine import MachineContext
    from ringcast.protocols.gms import SPEC
    from ringcast.protocols.gms import _messages as M
    from ringcast.protocols.gms.machine import GmsMachine

    b = GmsMachine(
        MachineContext("B", ("A", "B", "C"), ("A", "B", "C", "D")), SPEC.resolve_settings({})
    )
    b.handle(Start(), 0)

    def acks(out: list) -> list:
        return [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, M.ViewAck)]

    out = b.handle(Received("D", M.PrepareView("D:5", ("D", "B"))), 1_000_000)
    assert acks(out) == []
    assert [
        e.fields["view"] for e in out if isinstance(e, Record) and e.kind == "refused_view"
    ] == ["D:5"]
    out = b.handle(Received("D", M.PrepareView("D:6", ("D", "A", "B", "C"))), 1_500_000)
    assert acks(out) == []
    out = b.handle(Received("D", M.PrepareView("D:6", ("D", "A", "B", "C"), True)), 2_000_000)
    assert acks(out) == [M.ViewAck("D:6")]
    b.handle(Received("A", M.Suspect("C")), 3_000_000)
    out = b.handle(Received("D", M.PrepareView("D:7", ("D", "A", "B"), True)), 4_000_000)
    assert acks(out) == [M.ViewAck("D:7")]


def test_a_stale_join_does_not_split_a_group() -> None:
    """regress_stale_join (hostile seed 57's faults, run at seed 88): A sends JOIN to D,
    then gets into C's view C:7 through C. D, its view handler held by a merge meanwhile,
    comes to A's JOIN 800 ms later, long after A gave it up (join_timeout): it drops it
    (stale_join) instead of casting a view that would take A out of C:7 (before: D cast
    it and A refused it, refused_view; before that, A took it: a partial merge)."""
    rows = run("regress_stale_join", "two_phase", seed=88)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (join, *_) = [r for r in checks.records(rows, "join", "A") if r["detail"]["coordinator"] == "D"]
    (stale,) = checks.records(rows, "stale_join", "D")
    assert stale["detail"]["node"] == "A"
    views = [r for r in checks.records(rows, "view", "A") if r["t"] < stale["t"]]
    assert join["t"] < views[-1]["t"]
    assert views[-1]["view"] == "C:7" and views[-1]["members"][0] == "C"
    casts = [r for r in checks.records(rows, "cast_view", "D") if "A" in r["members"]]
    assert all(r["t"] > stale["t"] for r in casts)
    assert checks.records(rows, "refused_view", "A") == []


@pytest.mark.parametrize("seed", [33, 51])
def test_a_suspicion_does_not_shrink_a_merge_view(seed: int) -> None:
    """regress_merge_shrunk_by_suspicion (hostile seed 93's faults; drawn at seed 93, A
    restarted its merge view's first phase without a suspected D and left D in A:8).
    Run at seeds 33 and 51, where with today's merge timing the leader suspects a member
    of its merge view during its first phase: the view is installed whole."""
    rows = run("regress_merge_shrunk_by_suspicion", "two_phase", seed=seed)
    casts = [r for r in checks.records(rows, "cast_view") if r["detail"]["why"].startswith("merge")]
    shown = False
    for c in casts:
        installed = [r for r in checks.records(rows, "view", c["node"]) if r["view"] == c["view"]]
        if not installed:
            continue
        assert installed[0]["members"] == c["members"]
        shown |= any(
            c["t"] < r["t"] < installed[0]["t"] and r["detail"]["node"] in c["members"]
            for r in checks.records(rows, "suspect", c["node"])
        )
    assert shown, "no member of a merge view was suspected during its first phase"
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    # the lab's convergence
    assert convergence(rows, set("ABCDE"), 200_000_000) == []


def test_a_takeover_cut_off_from_its_view_adds_no_joiner() -> None:
    """regress_takeover_takes_a_joiner (hostile seed 659): E takes over alone in its
    partition side with A:6 prepared (A:5 + the joiner D); its takeover view holds no
    joiner, so no view merges D's singleton with a fragment of A:5 (before: E:7 = {E, D},
    a partial merge)."""
    rows = run("regress_takeover_takes_a_joiner", "two_phase", seed=659)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (takeover,) = [r for r in checks.records(rows, "takeover", "E") if r["t"] < 1_847_000_000]
    assert len(takeover["detail"]["suspects"]) >= 3
    cast = [r for r in checks.records(rows, "cast_view", "E") if r["t"] == takeover["t"]]
    assert cast and cast[0]["members"] == ["E"]


def test_a_joiner_waits_for_the_view_that_admits_it() -> None:
    """regress_joiner_gives_up_while_prepared (hostile seed 364): B's JOIN is served;
    B never gives up into a singleton of its own, and no merge leaves part of a group
    behind (before: B formed B:10 while C's view admitting it waited for E, and
    C:11 = {C, D, B} merged B:10 with part of C:8)."""
    rows = run("regress_joiner_gives_up_while_prepared", "two_phase", seed=364)
    assert checks.records(rows, "join", "B")  # B restarted and joins while E is silent
    assert checks.records(rows, "singleton", "B") == []
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []


def test_a_joiner_that_prepared_its_admission_waits_past_join_timeout() -> None:
    """The rule itself: D, joining, prepared A:2 that admits it; its join_timeout passes
    with no commit: it waits (join_wait) instead of discovering again, until
    view_ack_collection_timeout after the prepare, then asks again."""
    from ringcast.core.events import Received, Start, TimerFired
    from ringcast.core.machine import MachineContext
    from ringcast.protocols.gms import SPEC
    from ringcast.protocols.gms import _messages as M
    from ringcast.protocols.gms._state import St
    from ringcast.protocols.gms.machine import GmsMachine

    ms = 1_000_000
    d = GmsMachine(
        MachineContext("D", ("A", "B", "C"), ("A", "B", "C", "D"), joining=True),
        SPEC.resolve_settings({}),
    )
    d.handle(Start(), 0)
    d.handle(Received("A", M.FindMbrsRsp("A", "A:1")), 1 * ms)
    d.handle(TimerFired("gms:discovery"), 30 * ms)
    assert d.state is St.JOINING
    d.handle(Received("A", M.PrepareView("A:2", ("A", "B", "C", "D"))), 40 * ms)
    out = d.handle(TimerFired("gms:join"), 230 * ms)
    assert d.state is St.JOINING
    assert [e.kind for e in out if type(e).__name__ == "Record"] == ["join_wait"]
    d.handle(TimerFired("gms:join"), 430 * ms)
    assert d.state is St.JOINING
    out = d.handle(TimerFired("gms:join"), 630 * ms)  # past the first phase's timeout
    assert d.state is St.DISCOVERING
    assert "join_retry" in [e.kind for e in out if type(e).__name__ == "Record"]


def test_a_merge_takes_a_view_formed_just_before() -> None:
    """regress_new_view_unheard (hostile seed 725): A restarts and forms the singleton
    A:4 20 ms after the heal; its INFO goes out at once, and the first merge after the
    heal takes A:4 with the others (before: B merged C alone at 1.04 s)."""
    rows = run("regress_new_view_unheard", "two_phase", seed=725)
    heal, restart = 760_000_000, 750_000_000
    single = next(
        r for r in checks.records(rows, "view", "A") if r["members"] == ["A"] and r["t"] > restart
    )
    assert 0 < single["t"] - heal < 50_000_000
    merges = [r for r in checks.records(rows, "merge") if r["t"] > heal]
    assert merges
    assert single["view"] in {g["view"] for g in merges[0]["detail"]["subgroups"]}
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []


def _merge_members(rec: dict) -> list[str]:
    return sorted(m for g in rec["detail"]["subgroups"] for m in g["members"])


def test_a_merge_waits_for_the_nodes_it_hears_alive() -> None:
    """regress_merge_on_a_stale_picture (hostile seed 454): after the heal, A hears C's
    heartbeats but not its INFO; it asks C for it and waits, and its one merge after the
    heal takes A, B and C (before: A:4 = {A, B}, 259 ms after the heal, C left in C:2)."""
    rows = run("regress_merge_on_a_stale_picture", "two_phase", seed=454)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    heal = 1_790_000_000
    (merge,) = [r for r in checks.records(rows, "merge") if r["t"] > heal]
    assert _merge_members(merge) == ["A", "B", "C"]


def test_a_restart_cut_off_from_its_view_adds_no_joiner() -> None:
    """regress_restart_takes_a_joiner (hostile seed 274): A restarts its first phase
    down to no more than half of its view; the restarted views leave out the joiner D,
    who is on the other side in a singleton, down to A:8 = {A} (before: A:8 = {A, D}, a
    partial merge)."""
    rows = run("regress_restart_takes_a_joiner", "two_phase", seed=274)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (join,) = [r for r in checks.records(rows, "cast_view", "A") if r["detail"]["why"] == "join D"]
    restarts = [
        r
        for r in checks.records(rows, "cast_view", "A")
        if r["t"] > join["t"] and r["detail"]["why"].startswith("suspect")
    ]
    assert restarts and restarts[-1]["members"] == ["A"]
    assert all(r["members"] != ["A", "D"] for r in restarts)


def test_a_pause_does_not_use_up_the_acknowledgement_timeout() -> None:
    """regress_paused_past_the_ack_deadline (hostile seed 142): A pauses with its merge
    view A:6 waiting for D and resumes past the deadline; it asks D again instead of
    restarting without it, and A:6 is installed whole (before: A:7 without D). Run at
    seed 147, where with today's merge timing A pauses with A:6 still unacknowledged
    (at seed 142 A's merge view is now installed before the pause)."""
    rows = run("regress_paused_past_the_ack_deadline", "two_phase", seed=147)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert [r for r in checks.records(rows, "ack_timeout", "A") if r["view"] == "A:6"] == []
    installed = {r["node"] for r in checks.records(rows, "view") if r["view"] == "A:6"}
    assert installed == set("ABCDEF")


def test_a_member_prepares_a_merge_view_without_a_member_it_suspects() -> None:
    """regress_restarted_merge_view_refused (hostile seed 21): F crashes at 1.32 s, still
    a member of B's view B:7. A's merge view A:10 of A:7, B:7 and C:9 times out waiting
    for F; its restart A:11 (without F) is a merge view still, and B, whose own failure
    detector suspects F, prepares it: the seven others install A:11 (before: B, whose
    view held F, refused A:11, and A gave the merge up; A:12 was A's own view)."""
    rows = run("regress_restarted_merge_view_refused", "two_phase", seed=21)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    casts = {r["view"]: r for r in checks.records(rows, "cast_view", "A")}
    assert casts["A:10"]["detail"]["why"].startswith("merge")
    assert len(casts["A:10"]["members"]) == 8
    assert casts["A:11"]["detail"]["why"] == "view_ack_collection_timeout"
    assert sorted(casts["A:11"]["members"]) == sorted(set("ABCDEGH"))
    assert checks.records(rows, "refused_view", "B") == []
    installed = {r["node"] for r in checks.records(rows, "view") if r["view"] == "A:11"}
    assert installed == set("ABCDEGH")


def test_a_join_its_sender_gave_up_is_dropped() -> None:
    """regress_join_served_late (hostile seed 515's faults, run at seed 66, where with
    today's merge timing F still comes to D's JOIN late): F comes to D's queued JOIN
    long after it arrived; D formed a singleton meanwhile. F drops the JOIN (stale_join)
    and casts no view with D (before: F:4 = {F, D})."""
    rows = run("regress_join_served_late", "two_phase", seed=66)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (stale,) = checks.records(rows, "stale_join", "F")
    assert stale["detail"]["node"] == "D"
    assert stale["t"] - stale["detail"]["at"] > 200_000_000
    assert [r for r in checks.records(rows, "cast_view", "F") if "D" in r["members"]] == []
    assert checks.records(rows, "singleton", "D")


def test_a_join_queued_past_join_timeout_is_dropped() -> None:
    """The rule itself: A, held by B's merge, queues C's JOIN; freed by MERGE_CANCEL
    after join_timeout, it drops the JOIN instead of casting a view admitting C."""
    from ringcast.core.effects import Record, Send
    from ringcast.core.events import Received, Start
    from ringcast.core.machine import MachineContext
    from ringcast.protocols.gms import SPEC
    from ringcast.protocols.gms import _messages as M
    from ringcast.protocols.gms.machine import GmsMachine

    s = SPEC.resolve_settings({})
    a = GmsMachine(MachineContext("A", ("A",), ("A", "B", "C")), s)
    a.handle(Start(), 0)
    a.handle(Received("B", M.MergeReq("B:1")), 1_000_000)
    a.handle(Received("C", M.Join(0)), 2_000_000)
    out = a.handle(Received("B", M.MergeCancel("B:1")), 2_000_000 + s["join_timeout"] + 1)
    assert [e for e in out if type(e) is Record and e.kind == "stale_join"]
    assert [e for e in out if type(e) is Send and type(e.msg) is M.PrepareView] == []
    # a JOIN served within join_timeout is served
    a.handle(Received("B", M.MergeReq("B:2")), 10_000_000)
    a.handle(Received("C", M.Join(0)), 11_000_000)
    out = a.handle(Received("B", M.MergeCancel("B:2")), 12_000_000)
    assert [e for e in out if type(e) is Send and type(e.msg) is M.PrepareView]


def test_a_merge_view_a_member_cut_off_does_not_acknowledge_is_given_up() -> None:
    """regress_merge_view_across_a_partition (hostile seed 8779): a partition cuts C off
    during the first phase of A's merge view A:9 of seven singletons; at the timeout A
    suspects C but heard it answer the merge, so it gives the merge up (its own view,
    MERGE_CANCEL to the nodes asked), and a later merge takes C too (before: A:10, A:9
    less C, installed after the heal, left C in C:8)."""
    rows = run("regress_merge_view_across_a_partition", "two_phase", seed=8779)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    casts = {r["view"]: r for r in checks.records(rows, "cast_view", "A")}
    assert casts["A:9"]["detail"]["why"] == "merge A:1"
    assert len(casts["A:9"]["members"]) == 7
    assert casts["A:10"]["detail"]["why"] == "view_ack_collection_timeout"
    assert casts["A:10"]["members"] == ["A"]
    cancelled = [r for r in checks.records(rows, "merge_cancelled", "A") if r["t"] < 2_100_000_000]
    assert [r["detail"]["reason"] for r in cancelled] == ["silent"]
    assert "C" in casts["A:11"]["members"]


def test_a_takeover_does_not_carry_a_merge_view_on() -> None:
    """regress_takeover_carries_a_merge_view (hostile seed 7379): B takes over A:2 while
    A's merge view A:4 = A:2 + E is prepared; its takeover view is A:2 less A, without
    E (before: B:5 = A:4 less A, shrunk by suspicions to B:7 = {B, C, E}, which left A,
    alive again, in A:2)."""
    rows = run("regress_takeover_carries_a_merge_view", "two_phase", seed=7379)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (takeover,) = [r for r in checks.records(rows, "takeover", "B") if r["view"] == "A:2"]
    cast = next(r for r in checks.records(rows, "cast_view", "B") if r["t"] == takeover["t"])
    assert cast["members"] == ["B", "C", "D", "F"]


def test_a_join_served_after_its_sender_formed_a_view_is_refused() -> None:
    """regress_join_served_after_a_pause (hostile seed 1197): A, paused, serves D's JOIN
    on resuming, after D formed the singleton D:3; D refuses A:5 = {A, D}, which is no
    merge view, and a merge takes A, C and D (before: D installed A:5, a merge of D:3
    with A's view alone that left C in C:2)."""
    rows = run("regress_join_served_after_a_pause", "two_phase", seed=1197)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert checks.records(rows, "singleton", "D")
    assert {r["view"] for r in checks.records(rows, "refused_view", "D")} == {"A:5"}
    assert [r for r in checks.records(rows, "view") if r["view"] == "A:5"] == []


def test_a_merge_keeps_the_info_of_a_node_it_waited_for() -> None:
    """regress_merge_drops_a_waited_for_info (hostile seed 8238): A hears B alive behind
    a link losing 71% one way, and B's one INFO since the heal is over two intervals old
    when A stops waiting for a newer one; A keeps it and asks B with C: one merge of A,
    B and C (before: A:4 = {A, C}, B left in B:2)."""
    rows = run("regress_merge_drops_a_waited_for_info", "two_phase", seed=8238)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (start,) = checks.records(rows, "merge_start", "A")
    assert start["detail"]["asked"] == ["B", "C"]
    assert {r["node"] for r in checks.records(rows, "view") if r["view"] == "A:4"} == set("ABC")


def test_a_merge_does_not_wait_for_a_restarted_joiner() -> None:
    """regress_merge_asks_a_joiner (hostile seed 3933): A's merge asks E, restarted and
    joining, for its view before the crash; E refuses with no view, A forgets E's INFO
    and cancels at once, E's JOIN is served and the four live nodes are one view within
    10 T of the last fault (before: E dropped MERGE_REQ, three merges waited out their
    interval holding B and D, E's JOINs went stale, and the group settled after the
    bound)."""
    rows = run("regress_merge_asks_a_joiner", "two_phase", seed=3933)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    assert convergence(rows, set("ABDE"), 200_000_000) == []
    reasons = [r["detail"]["reason"] for r in checks.records(rows, "merge_cancelled", "A")]
    assert "refused by E (no view)" in reasons


def test_a_restarted_merge_view_that_would_leave_out_a_live_node_is_given_up() -> None:
    """regress_restarted_merge_leaves_a_side_out (hostile seed 7364): A's merge view
    A:11, decided 4 ms after the heal at 4.26 s, is never acknowledged by the crashed
    G; at the timeout A hears F alive outside it (in F:11 since before the heal), so it
    gives the merge up instead of restarting it without G, and the next merge takes
    every live node at once (before: A:12 = {A, B, C, E, H} without F)."""
    rows = run("regress_restarted_merge_leaves_a_side_out", "two_phase", seed=7364)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    (timeout,) = checks.records(rows, "ack_timeout", "A")
    assert timeout["view"] == "A:11" and timeout["detail"]["missing_acks"] == ["G"]
    cancelled = [r for r in checks.records(rows, "merge_cancelled", "A") if r["t"] == timeout["t"]]
    assert [r["detail"]["reason"] for r in cancelled] == ["silent"]
    merged = [r for r in checks.records(rows, "merge", "A") if r["t"] > timeout["t"]]
    taken = {m for g in merged[0]["detail"]["subgroups"] for m in g["members"]}
    assert taken == set("ABCEFH")
    assert convergence(rows, set("ABCEFH"), 350_000_000, end=8457_000_000) == []


def test_a_coordinator_casts_what_it_queued_when_a_merge_lock_expires() -> None:
    """regress_merge_lock_outlives_its_leader (hostile seed 6578): B, locked by A's merge
    whose MERGE_CANCEL is lost before A crashes, suspects C (crashed at 2.0 s) while
    locked; when the lock expires it excludes C, and C, restarted alone, is merged back
    (before: nothing cast the exclusion, C stayed a member of B:4 in B's view while
    alone in C:3, and B and C never settled)."""
    rows = run("regress_merge_lock_outlives_its_leader", "two_phase", seed=6578)
    assert checks.merge_atomicity(rows) == []
    assert checks.safety(rows) == []
    excluded = [r for r in checks.records(rows, "cast_view", "B") if r["t"] > 2004_000_000]
    assert excluded, "B never cast a view after C crashed"
    assert excluded[0]["detail"]["why"] == "exclude C" and excluded[0]["t"] < 3100_000_000
    assert convergence(rows, set("BC"), 350_000_000, end=6947_000_000) == []
