"""A ring hop over a link losing 66-89 % one way (the lab's hostile generator): the
Transport Manager's budget fails on it in almost every rotation, and with the Raincore
paper's cut on the first failure-on-delivery the node after it is cut, rejoins by its
911 and is cut again. The token confirmation (decision 37, on by default) resends the
same token once before the cut. The bundled regress_lossy_hop_two_nodes (hostile seed
785) is the class of two live nodes, regress_lossy_hop_ring (581) the class of three or
more (docs/protocols/raincore.md, "On the lab's hostile generator")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ringcast.lab import reference
from ringcast.lab.liveness import convergence, delivery_progress
from ringcast.protocols import registry
from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "raincore"


def _misses(name: str, seed: int, live: set[str], **settings: Any) -> tuple[list, list, list]:
    timeout = registry.get("raincore").timeout_ns({})
    assert timeout is not None
    sc = load_scenario(SCENARIOS / f"{name}.toml").with_settings(**settings)
    rows = Simulation(sc, seed=seed).run().events()
    end = sc.duration
    return (
        convergence(rows, live, timeout, end=end),
        delivery_progress(rows, end=end),
        reference.safety(rows),
    )


@pytest.mark.parametrize(
    ("name", "seed", "live", "missed"),
    [
        ("regress_lossy_hop_two_nodes", 785, {"A", "B"}, "convergence"),
        ("regress_lossy_hop_ring", 581, {"A", "B", "D"}, "delivery_progress"),
    ],
)
def test_confirmation_keeps_a_lossy_hop_in_the_ring(
    name: str, seed: int, live: set[str], missed: str
) -> None:
    conv, dp, safety = _misses(name, seed, live)
    assert conv == [] and dp == [] and safety == []
    conv, dp, safety = _misses(name, seed, live, token_confirmations=0)  # the paper's cut
    assert (conv if missed == "convergence" else dp) != []
    assert safety == []
