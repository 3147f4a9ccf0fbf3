"""Issue 24, Totem under sustained loss: the group settles into one ring.

Regressions of the two causes found (see "Liveness under loss" in
docs/protocols/totem.md), and a short version of the loss measurement of
``bench/totem_hostile.py``: at 20 % loss groups of 3, 5 and 8 settle within 20 token
timeouts of the last fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.core.effects import CancelTimer
from ringcast.core.events import Received
from ringcast.protocols.totem._messages import CommitToken
from ringcast.protocols.totem._state import State
from ringcast.protocols.totem.machine import T_TOKEN_RETRANSMIT
from ringcast.sim import Simulation, load_scenario

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


@pytest.mark.parametrize("nodes", [3, 5, 8])
def test_twenty_percent_loss_settles_within_twenty_token_timeouts(nodes: int) -> None:
    for seed in range(2):
        rows, alive, last = run(seed, nodes=nodes, loss=0.2, quiet_timeouts=25)
        st = settle_time(rows, alive, last)
        assert st is not None and st <= 20 * TOKEN_TIMEOUT, (seed, st)
