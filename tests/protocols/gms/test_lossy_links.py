"""GMS behind links losing most of what they send one way (docs/protocols/gms.md,
"Convergence, as the lab defines it for every family"): the probe before a suspicion,
and the regression scenarios of the merge classes fixed under the hostile generator,
each failing on the code before its rule. Each runs at the defaults, where it settles,
and again with the rule off (a setting) where it has one, to show the condition."""

from __future__ import annotations

from ringcast.core.units import MS
from ringcast.lab import reference as checks
from ringcast.lab.liveness import convergence

from .harness import run

T = 350 * MS
"""The failure-detection timeout at the defaults: 4 heartbeats of 50 ms and the probe's
150 ms (``ringcast.layers.detector.suspicion_time``)."""


def _converges(rows: list, live: set[str], end: int) -> list[str]:
    return convergence(rows, live, T, bound=10.0, end=end)


def _suspicions_after(rows: list, t: int) -> int:
    return sum(1 for r in checks.records(rows, "suspect") if r["t"] >= t)


def test_a_silent_peer_is_probed_before_it_is_suspected_behind_a_lossy_link() -> None:
    """false_suspicions_behind_a_lossy_link (hostile seed 4095): after the last fault at
    2.47 s, with links losing 83 % and 77 % one way, the probe keeps false suspicions to
    two and the group settles; suspected at once (the probe off), it suspects seven
    times and never settles for the bound."""
    quiet, end = 2472 * MS, 6672 * MS
    rows = run("false_suspicions_behind_a_lossy_link", "two_phase", seed=4095)
    assert checks.safety(rows) == [] and checks.merge_atomicity(rows) == []
    assert _converges(rows, {"A", "B", "C"}, end) == []
    assert _suspicions_after(rows, quiet) <= 2
    rows = run(
        "false_suspicions_behind_a_lossy_link", "two_phase", seed=4095, suspect_verify_timeout=0
    )
    assert _suspicions_after(rows, quiet) >= 5
    assert _converges(rows, {"A", "B", "C"}, end) != []


def _merges_after(rows: list, t: int) -> list[dict]:
    return [r for r in checks.records(rows, "merge_start") if r["t"] >= t]


def test_a_coordinator_asks_for_the_info_it_lacks_behind_a_lossy_link() -> None:
    """regress_info_lost_behind_a_lossy_link (hostile seed 726): A and C, singletons
    after the heal at 1.21 s, the link from C to A losing 77 %. A sends its INFO straight
    to C, whom it hears alive, and C answers: A leads the merge within a merge interval
    of the heal and the two settle. With MERGE3's INFO alone (direct_info off) A hears of
    C's view 2.3 s after the heal."""
    heal, end = 1210 * MS, 5410 * MS
    rows = run("regress_info_lost_behind_a_lossy_link", "two_phase", seed=726)
    assert checks.safety(rows) == [] and checks.merge_atomicity(rows) == []
    first = _merges_after(rows, heal)[0]
    assert first["node"] == "A" and first["detail"]["asked"] == ["C"]
    assert first["t"] - heal < 500 * MS
    assert _converges(rows, {"A", "C"}, end) == []
    rows = run("regress_info_lost_behind_a_lossy_link", "two_phase", seed=726, direct_info=False)
    assert _merges_after(rows, heal)[0]["t"] - heal > 2000 * MS


def test_info_heard_while_a_merge_is_under_way_is_asked_in_its_next_round() -> None:
    """regress_info_heard_during_a_merge (hostile seed 7197): A asks C to merge during a
    three-way partition; C, paused over the heal at 3.08 s, answers at 3.44 s. B's INFO,
    heard by A after the heal while the merge was under way, has B's view asked in a
    second round, and the merge view takes A, B and C (before: A:4 = {A, C}, a partial
    merge after the heal that left B in B:2)."""
    heal = 3082 * MS
    rows = run("regress_info_heard_during_a_merge", "two_phase", seed=7197)
    assert checks.safety(rows) == []
    assert checks.merge_atomicity(rows) == []
    (wave,) = [
        r
        for r in checks.records(rows, "merge_start", "A")
        if r["t"] > heal and r["detail"].get("wave") == 2
    ]
    assert wave["detail"]["asked"] == ["B"]
    merge = next(r for r in checks.records(rows, "merge", "A") if r["t"] >= wave["t"])
    taken = {m for g in merge["detail"]["subgroups"] for m in g["members"]}
    assert taken == {"A", "B", "C"}


def test_a_prepared_view_is_committed_by_its_coordinators_info() -> None:
    """regress_commit_lost_behind_a_lossy_link (hostile seed 2316): A installs A:6 =
    {A, C} at 5.10 s; the link from A to C loses 67 %, and every COMMIT_VIEW and answer
    to C's STATUS_VIEW is lost. A's INFO of A:6 counts as the commit once C asks
    STATUS_VIEW: C installs A:6 and the two settle (before: C held A:6 prepared to the
    end of the run)."""
    end = 8099 * MS
    rows = run("regress_commit_lost_behind_a_lossy_link", "two_phase", seed=2316)
    assert checks.safety(rows) == [] and checks.merge_atomicity(rows) == []
    (commit,) = checks.records(rows, "commit_from_info", "C")
    assert commit["view"] == "A:6"
    asked = [r["t"] for r in checks.records(rows, "status_view", "C") if r["view"] == "A:6"]
    assert asked and asked[0] < commit["t"]
    (installed,) = [r for r in checks.records(rows, "view", "C") if r["view"] == "A:6"]
    assert installed["t"] == commit["t"]
    assert _converges(rows, {"A", "C"}, end) == []
