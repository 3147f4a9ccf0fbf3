"""``basic`` across a receiver's restart: a message sent to an earlier boot of a node is
not delivered by its new boot (it was addressed to a process that crashed, and may have
delivered it already). The reliable layer refuses it (docs/protocols/raincore.md,
decision 34; its own tests in ``tests/layers/test_reliable.py``).

Found by the hostile generator once basic declared its failure-detection timeout (seed
168: A delivered C:54, crashed before its ack got through, restarted 59 ms later, and
delivered C:54 again from C's retransmission).
"""

from __future__ import annotations

from ringcast.lab import reference as checks
from ringcast.sim import Simulation
from ringcast.sim.garble import detection_timeout
from ringcast.sim.hostile import hostile_scenario


def test_hostile_seed_168_delivers_nothing_twice() -> None:
    run = hostile_scenario(168, "basic", token_timeout=detection_timeout("basic"))
    rows = Simulation(run.scenario, 168).run().events()
    assert checks.integrity(rows) == []
    reasons = {r["detail"].get("reason") for r in rows if r["kind"] == "drop"}
    assert "for_an_earlier_incarnation" in reasons  # the layer refused C:54 and others
