"""GMS keeps delivering across a rejoin: submits made while a node is not a member
(booting, rejoining after a restart or an exclusion) wait for its first view instead of
being dropped (docs/protocols/gms.md, "Decisions where the seed is silent")."""

from __future__ import annotations

import pytest

from ringcast.lab.liveness import delivery_progress

from . import checks
from .harness import MODES, run

REJOIN = "regress_submit_while_rejoining"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_submits_while_rejoining_are_sent_in_the_first_view(mode: str, seed: int) -> None:
    """C restarts at 250 ms and submits while it finds the group again: every message it
    submitted after the restart is delivered by C, A and B (the old code dropped those
    made before C's first view: delivery_progress failed)."""
    rows = run(REJOIN, mode, seed=seed)
    assert checks.safety(rows) == []
    restart = max(r["t"] for r in checks.records(rows, "fault", "C"))
    mine = {r["msg"] for r in rows if r["kind"] == "submit" and r["t"] >= restart}
    first_view = min(r["t"] for r in checks.records(rows, "view", "C") if r["t"] >= restart)
    assert any(r["t"] < first_view for r in rows if r["kind"] == "submit" and r["t"] >= restart)
    for node in "ABC":
        got = {r["msg"] for r in rows if r["kind"] == "deliver" and r["node"] == node}
        assert mine <= got, f"{node} never delivered {sorted(mine - got)}"
    assert delivery_progress(rows) == []
    assert checks.convergence(rows, {"A", "B", "C"}) == []
