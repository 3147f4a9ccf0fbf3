"""200 seeded runs with crashes, restarts (stable storage), partitions and merges, loss up to
20%, duplication and reordering, checked for every safety property and for convergence."""

from __future__ import annotations

import pytest

from .checks import check_all
from .randomized import run


@pytest.mark.parametrize("seed", range(200))
def test_random_faults(seed: int) -> None:
    rows, alive, last = run(seed)
    assert check_all(rows, alive, last) == []
    assert any(r["kind"] == "deliver" for r in rows)
