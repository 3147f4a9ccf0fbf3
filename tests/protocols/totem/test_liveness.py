"""Issue 24, Totem under sustained loss: the group settles into one ring.

Regressions of the two causes found (see "Liveness under loss" in
docs/protocols/totem.md), and a short version of the loss measurement of
``bench/totem_hostile.py``: at 20 % loss groups of 3, 5 and 8 settle within 20 token
timeouts of the last fault.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ringcast.core.effects import CancelTimer, Multicast
from ringcast.core.events import Received, Start
from ringcast.core.machine import MachineContext
from ringcast.protocols.totem import SPEC
from ringcast.protocols.totem._messages import CommitToken, Join, MergeDetect, RingId
from ringcast.protocols.totem._state import State
from ringcast.protocols.totem.machine import T_TOKEN_RETRANSMIT, TotemMachine
from ringcast.protocols.totem.membership import Gatherer
from ringcast.sim import Simulation, load_scenario

from . import checks
from .hostile import TOKEN_TIMEOUT, run, settle_time
from .test_hardening import in_commit

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "totem"


@pytest.mark.parametrize("seed", range(1, 9))
def test_a_partition_healed_under_25_percent_loss_settles(seed: int) -> None:
    sc = load_scenario(SCENARIOS / "regress_lossy_merge.toml")
    rows = Simulation(sc, seed=seed).run().events()
    heal = next(a.at for a in sc.nemesis if a.action == "heal")
    st = settle_time(rows, set(sc.nodes), heal)
    assert st is not None and st <= 10 * TOKEN_TIMEOUT, st


def test_a_late_first_rotation_copy_keeps_the_retransmission() -> None:
    """P2 forwarded the commit token to P3 and retransmits it until the token moves on;
    P1's late retransmission of the first rotation is dropped and cancels nothing."""
    m, mine = in_commit()
    assert m.rt_armed
    first = CommitToken(mine.ring_id, 0, mine.memb_list, 0, mine.entries[:1])
    out = m.handle(Received("P1", first), 3)
    assert CancelTimer(T_TOKEN_RETRANSMIT) not in out
    assert m.rt_armed and m.state is State.COMMIT


def test_a_ring_of_one_keeps_its_token() -> None:
    sc = load_scenario(SCENARIOS / "regress_ring_of_one.toml")
    rows = Simulation(sc, seed=1).run().events()
    a = [r for r in rows if r["node"] == "A" and 300_000_000 < r["t"] < 2_000_000_000]
    alone = [r for r in a if r["kind"] == "view" and r["members"] == ["A"]]
    assert alone, "A never formed its ring of one"
    after = [r for r in a if r["t"] > alone[0]["t"] and r["kind"] == "state"]
    assert after == [], [r["detail"] for r in after]
    final = {r["node"]: r["view"] for r in rows if r["kind"] == "view" and not r["transitional"]}
    assert len(set(final.values())) == 1


def test_fail_sets_do_not_outlive_their_round() -> None:
    """Hostile seed 323 (fail-set camps): N2 and N6, paused while the others formed a
    ring without them, fail the senders of that old round's joins on resuming. With fail
    sets scoped to a membership round they rejoin; before, they never did."""
    sc = load_scenario(SCENARIOS / "regress_fail_set_camps.toml")
    rows = Simulation(sc, seed=323).run().events()
    last_fault = max(a.at for a in sc.nemesis)
    st = settle_time(rows, set(sc.nodes), last_fault)
    assert st is not None and st <= 20 * TOKEN_TIMEOUT, st
    for prop in ("integrity", "total_order", "fifo", "view_agreement", "virtual_synchrony"):
        assert getattr(checks, prop)(rows) == [], prop
    assert checks.safe_delivery(rows) == []


def test_an_old_ring_frame_after_the_recovery_plan_is_not_delivered() -> None:
    """Hostile seed 8057: B resumes holding 5:A's token and multicasts on it while C is
    in Recovery for 9:A. C used to deliver those frames in 5:A and A never had them (the
    two moved 5:A -> 9:A/t/5:A with different message sets); now the exchange of recovery
    step 1 is the only way into the transitional delivery set."""
    sc = load_scenario(SCENARIOS / "regress_late_old_ring_frame.toml")
    rows = Simulation(sc, seed=8057).run().events()
    views = {(r["node"], r["view"]) for r in rows if r["kind"] == "view"}
    assert {("A", "9:A/t/5:A"), ("C", "9:A/t/5:A")} <= views  # the transition is there
    drops = [r for r in rows if r["kind"] == "drop" and r["node"] == "C"]
    assert any(
        r["detail"].get("reason") == "old-ring message after the recovery plan" for r in drops
    )
    for prop in ("integrity", "total_order", "fifo", "view_agreement", "virtual_synchrony"):
        assert getattr(checks, prop)(rows) == [], prop
    assert checks.safe_delivery(rows) == []


def test_a_senders_own_frame_behind_a_gap_is_delivered() -> None:
    """Hostile seed 1022: at a ring change B's own frame sat behind a frame that only
    departed processors held. Recovery step 4 stopped at that gap, and B never delivered
    its own message. Now every live node delivers every message it submitted since its
    last crash or restart, and no safety property breaks."""
    sc = load_scenario(SCENARIOS / "regress_own_frame_behind_gap.toml")
    rows = Simulation(sc, seed=1022).run().events()
    submitted: dict[str, set[str]] = {n: set() for n in sc.nodes}
    delivered: dict[str, set[str]] = {n: set() for n in sc.nodes}
    for r in rows:
        if r["kind"] == "fault" and r["detail"].get("action") in ("crash", "restart"):
            submitted[r["node"]].clear()
            delivered[r["node"]].clear()
        elif r["kind"] == "submit":
            submitted[r["node"]].add(r["msg"])
        elif r["kind"] == "deliver":
            delivered[r["node"]].add(r["msg"])
    assert all(submitted.values())
    assert {n: submitted[n] - delivered[n] for n in sc.nodes} == {n: set() for n in sc.nodes}
    for prop in ("integrity", "total_order", "fifo", "view_agreement", "virtual_synchrony"):
        assert getattr(checks, prop)(rows) == [], prop
    assert checks.safe_delivery(rows) == []


def test_a_join_of_an_older_round_fails_nobody() -> None:
    """A late join of a round that is over (a smaller ring seq) naming this node failed
    adds its sender's proc_set only: its fail_set does not fail the sender in return."""
    g = Gatherer("N2")
    g.start({"N1", "N2", "N3"}, set())
    old = Join("N3", 5, ("N1", "N2", "N3"), ("N1", "N2"))
    assert not g.merge("N3", old, same_round=False)
    assert g.my_fail_set == set() and "N3" not in g.consensus
    assert g.merge("N3", old, same_round=True)  # in its own round it counts
    assert g.my_fail_set == {"N3"}


def in_gather_with_failed(bad: str) -> TotemMachine:
    """N2 of {N1, N2, N3} in Gather, round 1, having failed ``bad`` in return for a join
    of this round naming N2 failed."""
    memb = ("N1", "N2", "N3")
    m = SPEC.factory(MachineContext("N2", memb, memb))
    assert isinstance(m, TotemMachine)
    m.handle(Start(), 0)
    assert m.state is State.GATHER and m.highest_seq == 1
    m.handle(Received(bad, Join(bad, 1, memb, ("N2",))), 1)
    assert m.gather.my_fail_set == {bad}
    m.handle(Received(bad, Join(bad, 1, memb, ())), 2)  # ignored: failed in this round
    assert m.gather.my_fail_set == {bad}
    return m


def test_a_join_of_a_newer_round_starts_the_round_over() -> None:
    """In Gather with N3 failed, a join from N3 with a larger ring seq is merged: N3's
    round moved on, and so does this node's, with an empty fail set."""
    m = in_gather_with_failed("N3")
    m.handle(Received("N3", Join("N3", 5, ("N1", "N2", "N3"), ())), 10)
    assert m.highest_seq == 5
    assert m.gather.my_fail_set == set()
    assert "N3" in m.gather.consensus


def test_a_newer_ring_seen_in_gather_starts_the_round_over() -> None:
    """A foreign message of a ring newer than this node's round (here the merge-detect
    of a ring N3 formed without it) ends the round: N3 is proposed again."""
    m = in_gather_with_failed("N3")
    out = m.handle(Received("N3", MergeDetect(RingId(5, "N3"), "N3")), 10)
    assert m.highest_seq == 5 and m.gather.my_fail_set == set()
    assert "N3" in m.gather.my_proc_set
    assert any(type(e) is Multicast and type(e.msg) is Join for e in out)


@pytest.mark.parametrize("nodes", [3, 5, 8])
def test_twenty_percent_loss_settles_within_twenty_token_timeouts(nodes: int) -> None:
    for seed in range(2):
        rows, alive, last = run(seed, nodes=nodes, loss=0.2, quiet_timeouts=25)
        st = settle_time(rows, alive, last)
        assert st is not None and st <= 20 * TOKEN_TIMEOUT, (seed, st)


def _failover(const: int, seed: int) -> tuple[float, list[dict]]:
    """``scenarios/totem/crash.toml`` (5 nodes, C crashed at 600 ms) with
    ``join_silence_const``: ms from the crash to the last survivor's ring without C."""
    sc = load_scenario(SCENARIOS / "crash.toml")
    sc = dataclasses.replace(sc, settings={**sc.settings, "join_silence_const": const})
    rows = Simulation(sc, seed=seed).run().events()
    crash = next(r["t"] for r in rows if r["kind"] == "fault")
    first: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "view" and r["t"] > crash and "/t/" not in str(r["view"]):
            assert "C" not in r["members"]
            first.setdefault(r["node"], r["t"])
    assert set(first) == {"A", "B", "D", "E"}
    return (max(first.values()) - crash) / 1e6, rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_silent_member_is_failed_after_join_silence_const_join_timeouts(seed: int) -> None:
    """Off (the default), a crashed member is failed at the consensus timeout: the
    survivors' new ring comes after token_timeout + consensus_timeout (200 + 240 ms).
    With ``join_silence_const`` 3 it is failed 3 join timeouts (60 ms) into Gather, and
    only it: every live member sent a join by then."""
    off, rows_off = _failover(0, seed)
    on, rows_on = _failover(3, seed)
    assert 440 <= off < 480
    assert 260 <= on < 290
    assert not [r for r in rows_off if r["kind"] == "silent"]
    silent = [r for r in rows_on if r["kind"] == "silent"]
    assert silent and all(r["detail"]["nodes"] == ["C"] for r in silent)
    for check in (checks.view_agreement, checks.virtual_synchrony, checks.safe_delivery):
        assert check(rows_on) == []
