"""Regressions found by the hostile soak of issue 24, each a bundled scenario."""

from __future__ import annotations

import pytest

from . import checks
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
