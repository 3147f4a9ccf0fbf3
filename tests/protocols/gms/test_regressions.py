"""Regressions found by the hostile soak, each a bundled scenario."""

from __future__ import annotations

import pytest

from ringcast.lab import reference as checks

from .harness import MODES, run

RESTART = "regress_restart_reuses_view_id"


@pytest.mark.parametrize("mode", MODES)
def test_a_restarted_creator_does_not_reuse_the_boot_view_id(mode: str) -> None:
    """A restarts alone: its singleton view is A:2, not a second A:1 of other members."""
    rows = run(RESTART, mode)
    assert checks.view_agreement(rows) == []
    singles = [r for r in checks.records(rows, "view", "A") if r["members"] == ["A"]]
    assert singles[0]["view"] == "A:2"
    assert checks.safety(rows) == []
    assert checks.convergence(rows, {"A", "B"}) == []


STALE = "regress_stale_coordinator"
LOST_REQS = "regress_lost_merge_requests"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_coordinator_merges_with_members_that_moved_on(seed: int) -> None:
    """A still lists B and C, who committed B:2 without it: A merges A:1 and B:2."""
    rows = run(STALE, "two_phase", seed=seed)
    assert checks.safety(rows) == []
    assert checks.records(rows, "view", "A")[0]["view"] == "A:1"
    assert {r["node"] for r in rows if r["kind"] == "view" and r["view"] == "B:2"} == {"B", "C"}
    merges = checks.records(rows, "merge", "A")
    assert merges
    assert {g["view"] for g in merges[0]["detail"]["subgroups"]} == {"A:1", "B:2"}
    assert checks.convergence(rows, {"A", "B", "C"}) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lost_merge_requests_are_asked_again(seed: int) -> None:
    """The first eight MERGE_REQs to C are lost: A asks again within the same attempt,
    which is never cancelled, and the three singletons merge."""
    rows = run(LOST_REQS, "two_phase", seed=seed)
    assert checks.safety(rows) == []
    # one attempt asks C, and it is never cancelled (an attempt that asked B alone
    # during the partition, on B's INFO from before it, may be cancelled as stale)
    (asks_c,) = [r for r in checks.records(rows, "merge_start") if "C" in r["detail"]["asked"]]
    assert not [r for r in checks.records(rows, "merge_cancelled") if r["t"] > asks_c["t"]]
    (merge,) = checks.records(rows, "merge", "A")
    assert merge["detail"]["merge"] == asks_c["detail"]["merge"]
    assert merge["t"] - asks_c["t"] >= 8 * 20_000_000  # the eight lost requests, every rto
    assert checks.convergence(rows, {"A", "B", "C"}) == []


UNNOTICED = "regress_coordinator_restarts_unnoticed"


@pytest.mark.parametrize("mode", MODES)
def test_a_coordinator_restarted_before_anybody_noticed_joins_again(mode: str) -> None:
    """The members that hear the restarted A's FIND_MBRS suspect its previous
    incarnation; B takes over; A, named coordinator by an answer, does not JOIN itself
    and joins B's view."""
    rows = run(UNNOTICED, mode)
    assert checks.safety(rows) == []
    assert {r["detail"]["node"] for r in checks.records(rows, "restarted")} == {"A"}
    assert {r["node"] for r in checks.records(rows, "restarted")} == {"B", "C"}
    named = checks.records(rows, "previous_incarnation", "A")
    assert named and all(set(r["detail"]["named_by"]) <= {"B", "C"} for r in named)
    assert checks.records(rows, "join", "A")[-1]["detail"]["coordinator"] == "B"
    assert checks.last_views(rows)["A"][1] == ("B", "C", "A")
    assert checks.convergence(rows, {"A", "B", "C"}) == []


HIDDEN = "regress_restart_hides_dead_coordinator"


@pytest.mark.parametrize("mode", MODES)
def test_a_restarted_member_does_not_hide_a_dead_coordinator(mode: str) -> None:
    """C restarts unnoticed and A dies: B suspects C's previous incarnation on its
    FIND_MBRS, its FD ring then watches A, B takes over and C joins B."""
    rows = run(HIDDEN, mode)
    assert checks.safety(rows) == []
    assert [(r["node"], r["detail"]["node"]) for r in checks.records(rows, "restarted")] == [
        ("B", "C")
    ]
    assert any(r["detail"]["node"] == "A" for r in checks.records(rows, "suspect", "B"))
    assert checks.last_views(rows)["C"][1] == ("B", "C")
    assert checks.convergence(rows, {"B", "C"}) == []
