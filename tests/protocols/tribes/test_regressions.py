"""Regressions found by the hostile soak of issue 24, each a bundled scenario."""

from __future__ import annotations

from collections import Counter

import pytest

from . import checks
from .harness import run


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_restarted_receiver_does_not_deliver_again(seed: int) -> None:
    """A's messages to B's first incarnation, unacknowledged when B crashed, are
    retransmitted to the restarted B: it drops them, and no node delivers a message
    twice over the whole run (the lab's integrity, across incarnations)."""
    rows = run("regress_restart_redelivers", seed=seed).events()
    twice = [
        k
        for k, n in Counter((r["node"], r["msg"]) for r in rows if r["kind"] == "deliver").items()
        if n > 1
    ]
    assert twice == []
    dropped = [
        r
        for r in rows
        if r["kind"] == "drop" and "earlier incarnation" in r["detail"].get("reason", "")
    ]
    assert dropped and {r["node"] for r in dropped} == {"B"}
    # B delivered A's messages before its crash, and again after its restart
    b = sorted(r["t"] for r in rows if r["kind"] == "deliver" and r["node"] == "B")
    assert b[0] < 330_000_000 < 345_000_000 < b[-1]
    assert checks.check_all(rows) == []
