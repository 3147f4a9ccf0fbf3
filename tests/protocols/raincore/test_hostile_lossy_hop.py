"""A ring hop over a link losing 66-89 % one way (the lab's hostile generator): the
Transport Manager's budget fails on it in almost every rotation, and with the Raincore
paper's cut on the first failure-on-delivery the node after it is cut, rejoins by its
911 and is cut again. The token confirmation (decision 37, on by default) resends the
same token once before the cut. Hostile seed 785 is the class of two live nodes, 581
the class of three or more (docs/protocols/raincore.md, "On the lab's hostile
generator")."""

from __future__ import annotations

from typing import Any

import pytest

from ringcast.lab import reference
from ringcast.lab.liveness import convergence, delivery_progress
from ringcast.protocols import registry
from ringcast.sim import Simulation
from ringcast.sim.hostile import hostile_scenario


def _misses(seed: int, settings: dict[str, Any]) -> tuple[list[str], list[str], list[Any]]:
    timeout = registry.get("raincore").timeout_ns({})
    assert timeout is not None
    run = hostile_scenario(seed, "raincore", token_timeout=timeout, settings=settings)
    rows = Simulation(run.scenario, seed=seed).run().events()
    end = run.scenario.duration
    return (
        convergence(rows, run.live, timeout, end=end),
        delivery_progress(rows, end=end),
        reference.safety(rows),
    )


@pytest.mark.parametrize(("seed", "missed"), [(785, "convergence"), (581, "delivery_progress")])
def test_confirmation_keeps_a_lossy_hop_in_the_ring(seed: int, missed: str) -> None:
    conv, dp, safety = _misses(seed, {})
    assert conv == [] and dp == [] and safety == []
    conv, dp, safety = _misses(seed, {"token_confirmations": 0})  # the paper's cut
    assert (conv if missed == "convergence" else dp) != []
    assert safety == []
