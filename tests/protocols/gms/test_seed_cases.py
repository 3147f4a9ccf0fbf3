"""JGRP-136's four failure cases A-D: each fails as JGRP-136 says with ``plain`` view
installation, and does not with ``acks`` (A, B, C) and ``two_phase`` (A-D)."""

from __future__ import annotations

import pytest

from ringcast.lab import reference as checks

from .harness import run

S = 1_000_000_000
CASE_A = "case_a_new_coord_no_takeover"
CASE_B = "case_b_continuous_suspects"
CASE_C = "case_c_old_coord_crashes"
CASE_D = "case_d_coord_leaves_during_join"


def _leads(rows: list[dict], node: str) -> bool:
    return any(r["detail"]["leader"] == node for r in checks.records(rows, "leader", node))


# -- case A: the new coordinator does not take over


def test_case_a_plain_b_never_coordinator_and_d_loops() -> None:
    rows = run(CASE_A, "plain")
    last = checks.last_views(rows)
    assert last["C"][1] == ("B", "C")  # C installed V2 ...
    assert last["B"][1] == ("A", "B", "C")  # ... B still has V1 and A as coordinator
    assert not _leads(rows, "B")
    # D joins at 1.2 s and loops until the end: B refuses it, it never gets a view
    assert "D" not in last
    rejected = checks.records(rows, "join_rejected", "D")
    assert len(rejected) >= 20
    assert {r["detail"]["by"] for r in rejected} == {"B"}
    assert all("coordinator is A" in r["detail"]["reason"] for r in rejected)
    assert max(r["t"] for r in rejected) > 2.9 * S
    assert checks.convergence(rows, {"B", "C", "D"}) != []
    assert checks.invariants(rows) == []


@pytest.mark.parametrize("mode", ["acks", "two_phase"])
def test_case_a_fixed(mode: str) -> None:
    rows = run(CASE_A, mode)
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C", "D"}) == []
    assert _leads(rows, "B")
    assert checks.last_views(rows)["D"][1] == ("B", "C", "D")
    assert len(checks.records(rows, "join_attempt", "D")) == 1
    assert checks.records(rows, "join_rejected") == []


# -- case B: continuous SUSPECT messages


def test_case_b_plain_c_suspects_a_for_ever() -> None:
    rows = run(CASE_B, "plain")
    last = checks.last_views(rows)
    assert last["B"][1] == ("B", "C")
    assert last["C"][1] == ("A", "B", "C")
    suspects = [r for r in checks.records(rows, "suspect", "C") if r["detail"]["node"] == "A"]
    assert len(suspects) >= 15
    assert max(r["t"] for r in suspects) > 2.8 * S  # still at it at the end of the run
    ignored = checks.records(rows, "ignored_suspect", "B")
    assert len(ignored) >= 15
    assert checks.convergence(rows, {"B", "C"}) != []


@pytest.mark.parametrize("mode", ["acks", "two_phase"])
def test_case_b_fixed(mode: str) -> None:
    rows = run(CASE_B, mode)
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C"}) == []
    late = [r for r in checks.records(rows, "suspect") if r["t"] > 1.5 * S]
    assert late == []
    if mode == "acks":  # solution 2: B resends its view to the member that missed it
        assert checks.records(rows, "resend_view", "B")
    else:  # the second in line took over and restarted the first phase
        assert checks.records(rows, "takeover", "B")


# -- case C: the old coordinator crashes before retransmitting


def test_case_c_plain_b_never_takes_over() -> None:
    rows = run(CASE_C, "plain")
    last = checks.last_views(rows)
    assert last["B"][1] == ("A", "B", "C")
    assert last["C"][1] == ("B", "C")
    assert not _leads(rows, "B")
    assert checks.records(rows, "takeover") == []
    assert checks.convergence(rows, {"B", "C"}) != []


def test_case_c_acks_view_in_the_stability_digest() -> None:
    rows = run(CASE_C, "acks")
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C"}) == []
    (adopted,) = checks.records(rows, "digest_view", "B")
    assert adopted["view"] == checks.last_views(rows)["C"][0]


def test_case_c_two_phase_status_view_answered_by_commit() -> None:
    rows = run(CASE_C, "two_phase")
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C"}) == []
    asked = checks.records(rows, "status_view", "B")
    answered = checks.records(rows, "status_answered", "C")
    assert asked and answered and answered[0]["detail"]["to"] == "B"
    assert checks.last_views(rows)["B"] == checks.last_views(rows)["C"]


# -- case D: the coordinator leaves while P joins


def _views_of(rows: list[dict], node: str) -> set[str]:
    return {r["view"] for r in checks.records(rows, "view", node)}


def test_case_d_plain_p_and_the_others_disagree() -> None:
    rows = run(CASE_D, "plain")
    others = _views_of(rows, "A") | _views_of(rows, "B") | _views_of(rows, "C")
    alone = _views_of(rows, "P") - others
    assert alone, "P installed a view nobody else installed"
    last = checks.last_views(rows)
    assert last["B"] == last["C"] != last["P"]
    assert "P" not in last["B"][1] and "P" in last["P"][1]
    assert checks.convergence(rows, {"B", "C", "P"}) != []


def test_case_d_two_phase_fixed() -> None:
    rows = run(CASE_D, "two_phase")
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C", "P"}) == []
    for v in _views_of(rows, "P"):  # every view P installed, another member installed too
        assert any(v in _views_of(rows, n) for n in "ABC")


@pytest.mark.parametrize("mode", ["plain", "acks", "two_phase"])
@pytest.mark.parametrize("case", [CASE_A, CASE_B, CASE_C, CASE_D])
def test_no_mode_breaks_safety_in_the_cases(case: str, mode: str) -> None:
    """The failures are of liveness and agreement over time, never of a view id
    named with two member lists, two leaders, a duplicate or a FIFO inversion."""
    assert checks.safety(run(case, mode)) == []


def test_case_b_acks_resends_the_view_on_a_suspect_of_a_non_member() -> None:
    """With the digests out of the way, solution 2's first half alone fixes case B:
    SUSPECT(A) reaches B, A is not in B's view, B resends it."""
    rows = run(CASE_B, "acks", stable_interval="10s")
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"B", "C"}) == []
    resent = checks.records(rows, "resend_view", "B")
    assert resent and resent[0]["detail"]["reason"] == "suspect A"
    assert checks.records(rows, "digest_view") == []
