"""The smallest failing runs of the hostile soak, bundled as ``scenarios/raincore/regress_*.toml``
and run with their own seed: each once broke the property listed with it, and keeps
every safety property. A liveness regression
("convergence") failed to settle after its last fault; it must now settle within the
bound of docs/protocols/raincore.md, stated in token timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.lab import reference as checks
from ringcast.sim import Simulation, load_scenario
from ringcast.sim.scenario import Scenario

from .hostile import SETTLE_BOUND, safety

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "raincore"
REGRESSIONS = {
    # file: the property it once broke
    "regress_split_brain_1of2": "view_agreement",
    "regress_total_order_heal": "total_order",
    "regress_exactly_half_lock": "mutual_exclusion",
    "regress_911_universe": "convergence",
    "regress_chaos_messages_lost": "delivery_progress",
    "regress_no_token_to_copy": "delivery_progress",
    # the lossy hop's two: the loss goes on to the end, so a short relapse is allowed;
    # the lab's convergence (no unsettled period longer than the bound) holds them, in
    # test_hostile_lossy_hop.py
    "regress_lossy_hop_two_nodes": "convergence (the lab's)",
    "regress_lossy_hop_ring": "delivery_progress",
}


def live_and_quiet(sc: Scenario) -> tuple[set[str], int]:
    """The nodes up at the end (a crash without a later restart is for good) and when
    the last fault happened."""
    live = set(sc.nodes)
    for action in sorted(sc.nemesis, key=lambda a: a.at):
        if action.action == "crash" and action.node is not None:
            live.discard(action.node)
        elif action.action == "restart" and action.node is not None:
            live.add(action.node)
    return live, max((a.at for a in sc.nemesis), default=0)


def test_every_bundled_regression_is_listed() -> None:
    assert {p.stem for p in SCENARIOS.glob("regress_*.toml")} == set(REGRESSIONS)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_scenario_keeps_raincore_safe(name: str) -> None:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    assert safety(rows, sc.duration) == {}
    assert [r for r in rows if r["kind"] == "deliver"]


def test_split_brain_scenario_commits_one_membership_per_index() -> None:
    sc = load_scenario(SCENARIOS / "regress_split_brain_1of2.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    by_index: dict[int, set[tuple[str, ...]]] = {}
    for r in rows:
        if r["kind"] == "view":
            by_index.setdefault(int(r["view"]), set()).add(tuple(r["members"]))
    assert all(len(m) == 1 for m in by_index.values()), by_index
    # the two-member ring (C, B) of the old run was committed without A's signature
    assert ("C", "B") not in {m for ms in by_index.values() for m in ms}


@pytest.mark.parametrize("name", sorted(n for n, p in REGRESSIONS.items() if p == "convergence"))
def test_liveness_regression_settles_within_the_bound(name: str) -> None:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    live, quiet = live_and_quiet(sc)
    settled = checks.settled_at(rows, live, quiet, sc.duration)
    assert settled is not None, f"{sorted(live)} never settled after {quiet / 1e6:.0f} ms"
    assert settled - quiet <= SETTLE_BOUND
    # and it stays settled to the end: no node leaves the agreed ring again
    assert all(b <= settled for _, b in checks.unsettled_spans(rows, live, sc.duration))


def test_a_node_delivers_every_message_it_submitted_in_chaos() -> None:
    """No node crashes in this scenario, so each delivers every message it submitted,
    those submitted while it was cut off in Chaos included (the failure guarded against:
    B, C and F losing 22 between them, put on a copy of the token that did not survive)."""
    sc = load_scenario(SCENARIOS / "regress_chaos_messages_lost.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    assert not [a for a in sc.nemesis if a.action in ("crash", "restart")]
    submitted = {(r["node"], r["msg"]) for r in rows if r["kind"] == "submit"}
    delivered = {(r["node"], r["msg"]) for r in rows if r["kind"] == "deliver"}
    assert len(submitted) > 200
    assert sorted(submitted - delivered) == []


def test_a_majority_that_never_held_the_token_starts_a_fresh_one() -> None:
    """A, the only holder of the token, crashes for good; B never held it and C
    restarts: the two are a majority of three and form a ring from a fresh token
    (the failure guarded against: the two starving to the end, delivering nothing)."""
    sc = load_scenario(SCENARIOS / "regress_no_token_to_copy.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    live, quiet = live_and_quiet(sc)
    assert live == {"B", "C"}
    created = [r for r in rows if r["kind"] == "token" and r["detail"]["op"] == "created"]
    assert {r["node"] for r in created} >= {"A", "C"}  # A at boot, C from nothing
    after = {
        (r["node"], tuple(sorted(r["members"])))
        for r in rows
        if r["kind"] == "view" and r["t"] > quiet
    }
    assert {("B", ("B", "C")), ("C", ("B", "C"))} <= after
    restart = max(a.at for a in sc.nemesis if a.action == "restart" and a.node == "C")
    for node, since in (("B", 0), ("C", restart)):
        mine = {
            r["msg"]
            for r in rows
            if r["kind"] == "submit" and r["node"] == node and r["t"] >= since
        }
        got = {r["msg"] for r in rows if r["kind"] == "deliver" and r["node"] == node}
        assert mine and mine <= got, sorted(mine - got)[:5]


def _regular_views(rows: list) -> list:
    return [r for r in rows if r["kind"] == "view" and not r.get("transitional")]


def test_a_911_round_the_universe_regenerates_the_ring() -> None:
    """regress_911_universe shows its condition: A and B commit (A, B) while C is cut
    off; after the heal A's 911, failing at the crashed B, goes on to C (``rerouted``),
    and A regenerates the ring (A, C), committed by both within half a token timeout."""
    sc = load_scenario(SCENARIOS / "regress_911_universe.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    heal = next(a.at for a in sc.nemesis if a.action == "heal")
    views = _regular_views(rows)
    assert any(r["members"] == ["A", "B"] and r["t"] < heal for r in views)
    assert any(
        r["kind"] == "911" and r["node"] == "A" and r["detail"] == {"dst": "C", "op": "rerouted"}
        for r in rows
    )
    ac = [r for r in views if r["members"] == ["A", "C"] and r["t"] > heal]
    assert {r["node"] for r in ac} == {"A", "C"}
    timeout = int(sc.settings.get("hungry_timeout", 500_000_000))
    assert max(r["t"] for r in ac) - heal < timeout // 2


def test_a_node_alone_with_exactly_half_of_its_view_does_not_take_the_lock() -> None:
    """regress_exactly_half_lock shows its condition: C cut off, A and B the committed
    ring (A, B) taking the lock in turn; A, whose token's acks are lost, asks with a 911
    and is answered NO: no configuration of A alone is committed and no lock granted
    while the partition lasts (before: A committed (A) and granted it beside B)."""
    sc = load_scenario(SCENARIOS / "regress_exactly_half_lock.toml")
    rows = Simulation(sc, seed=sc.seed).run().events()
    cut = next(a.at for a in sc.nemesis if a.action == "partition")
    heal = next(a.at for a in sc.nemesis if a.action == "heal")
    during = [r for r in _regular_views(rows) if cut < r["t"] < heal]
    assert during and all(r["members"] == ["A", "B"] for r in during)
    grants = [r for r in rows if r["kind"] == "lock" and r["detail"].get("op") == "granted"]
    assert {r["node"] for r in grants if cut < r["t"] < heal} == {"A", "B"}
    assert any(
        r["kind"] == "911"
        and r["node"] == "A"
        and r["detail"].get("status") == "NO"
        and cut < r["t"] < heal
        for r in rows
    )
