"""The worked examples of Tomcat's NonBlockingCoordinator documentation, asserted step by
step: the token sends the documentation prints, the state it tabulates after step (5), and
the confirmed view."""

from __future__ import annotations

from ringcast.core.units import MS

from .harness import final_leaders, final_views, machine, run, tokens

ALL5 = ("A", "B", "C", "D", "E")
ALL6 = ("A", "B", "C", "C1", "D", "E")


def test_scenario_1_tokens_x_and_y_follow_the_seed() -> None:
    res = run("partial_views")
    seq = tokens(res, {"A.1.1": "X", "C.1.1": "Y"})
    assert seq == [
        # (1) A sends X to B; C sends Y to D
        "X{A-ldr, A-src, mbrs-A,B,C,D} A->B",
        "Y{C-ldr, C-src, mbrs-C,D,E} C->D",
        # (2) B passes X on to C; D, aware of A and B, re-leads Y to A and sends it to E
        "X{A-ldr, A-src, mbrs-A,B,C,D} B->C",
        "Y{A-ldr, C-src, mbrs-A,B,C,D,E} D->E",
        # (3) C adds E to X and sends it to D; E sends Y to A
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} C->D",
        "Y{A-ldr, C-src, mbrs-A,B,C,D,E} E->A",
        # (4) D sends X to A (A holds Y and adds E to its members)
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} D->A",
        # (5) X arrived changed ({A,B,C,D} sent, {A..E} back): A resends it
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} A->B",
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} B->C",
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} C->D",
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} D->E",
        "X{A-ldr, A-src, mbrs-A,B,C,D,E} E->A",
    ]
    ops = [(r["node"], r["detail"]["op"]) for r in res.events(kind="coord")]
    assert ("A", "hold") in ops and ("A", "resend") in ops and ("A", "conf") in ops
    hold = next(r for r in res.events(kind="coord", node="A") if r["detail"]["op"] == "hold")
    assert hold["detail"]["election"] == "C.1.1" and hold["detail"]["source"] == "C"


def test_scenario_1_state_after_step_5_is_the_seeds_table() -> None:
    # Time of step (5): the start-up wait ends at 100 ms, one hop takes 1 ms.
    res = run("partial_views", until=104 * MS + MS // 2)
    state = {}
    for n in ALL5:
        tok = machine(res, n).last_token
        assert tok is not None
        state[n] = (tok.leader, ",".join(m.node for m in tok.members), tok.id)
    assert state == {
        "A": ("A", "A,B,C,D,E", "A.1.1"),
        "B": ("A", "A,B,C,D", "A.1.1"),
        "C": ("A", "A,B,C,D,E", "A.1.1"),
        "D": ("A", "A,B,C,D,E", "A.1.1"),
        "E": ("A", "A,B,C,D,E", "C.1.1"),  # "E still thinks the viewId=Y"
    }
    # No view is confirmed yet; E is on Y until A's resent X reaches it.
    assert res.events(kind="view") == []


def test_scenario_1_ends_with_one_view_and_leader_a() -> None:
    res = run("partial_views")
    views = final_views(res)
    assert set(views) == set(ALL5)
    assert {v for v in views.values()} == {("A:1", ALL5)}
    assert set(final_leaders(res).values()) == {"A"}
    # COORD_CONF comes after the second circulation of X, at every member once
    assert [r["node"] for r in res.events(kind="view")].count("E") == 1
    # the partial views were real: A never heard E's heartbeats (E is hearsay at A)
    a = machine(res, "A").membership
    assert not a.members["E"].direct and a.members["B"].direct


def test_c1_seeing_b_d_e_waits_for_the_leaders_token() -> None:
    res = run("c1_sees_bde")
    seq = [s for s in tokens(res, {"A.1.2": "W"}) if s.startswith("W")]
    assert seq == [
        f"W{{A-ldr, A-src, mbrs-A,B,C,C1,D,E}} {a}->{b}"
        for a, b in [("A", "B"), ("B", "C"), ("C", "C1"), ("C1", "D"), ("D", "E"), ("E", "A")]
    ]
    c1 = machine(res, "C1")
    # C1 never started an election of its own: it waited and the token arrived
    assert not any(
        r["detail"]["source"] == "C1"
        for r in res.events(kind="coord", node="C1")
        if r["detail"]["op"] == "request"
    )
    assert c1.view_id == "A:2" and c1.getView() == ALL6 and c1.getCoordinator() == "A"
    assert {v for v in final_views(res).values()} == {("A:2", ALL6)}


def test_c1_seeing_only_d_e_sends_z_which_a_takes_over() -> None:
    res = run("c1_sees_de")
    z = [s for s in tokens(res, {"C1.1.1": "Z"}) if s.startswith("Z")]
    assert z == [
        "Z{C1-ldr, C1-src, mbrs-C1,D,E} C1->D",
        "Z{A-ldr, C1-src, mbrs-A,B,C,C1,D,E} D->E",
        "Z{A-ldr, C1-src, mbrs-A,B,C,C1,D,E} E->A",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} A->B",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} B->C",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} C->C1",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} C1->D",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} D->E",
        "Z{A-ldr, A-src, mbrs-A,B,C,C1,D,E} E->A",
    ]
    confs = [r for r in res.events(kind="coord", node="A") if r["detail"]["op"] == "conf"]
    assert confs[-1]["detail"]["election"] == "C1.1.1"
    assert {v for v in final_views(res).values()} == {("A:2", ALL6)}
    assert set(final_leaders(res).values()) == {"A"}
    # A, B, C never heard C1, nor C1 them: they know each other from the token only
    for n in ("A", "B", "C"):
        assert not machine(res, n).membership.members["C1"].direct
