"""200 seeded runs with crashes, restarts (stable storage), partitions and merges, loss up to
20%, duplication and reordering, checked for every safety property and for convergence."""

from __future__ import annotations

import pytest

from ringcast.lab.reference import totem_check_all

from .randomized import run

# Seeds beyond the suite's range that once failed (found by soak.py; see "Soak findings"
# in docs/protocols/totem.md): 350 deadlocked in Gather, 446 was a wrong safe_delivery
# verdict on a member that crashed in Recovery.
EXTRA_SEEDS = (350, 446)


@pytest.mark.parametrize("seed", [*range(200), *EXTRA_SEEDS])
def test_random_faults(seed: int) -> None:
    rows, alive, _last = run(seed)
    assert totem_check_all(rows, alive) == []
    assert any(r["kind"] == "deliver" for r in rows)
