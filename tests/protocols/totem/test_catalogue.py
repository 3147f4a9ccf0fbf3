"""The fault catalogue under scenarios/totem/: each run is checked for every property."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ringcast.core.effects import Backpressure
from ringcast.lab.reference import totem_check_all
from ringcast.protocols.totem.machine import TotemMachine
from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "totem"
LIVE = {"crash": {"A", "B", "D", "E"}}


@pytest.mark.parametrize("name", ["crash", "restart", "partition_merge", "lossy"])
def test_fault_catalogue(name: str) -> None:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    res = Simulation(sc, seed=3).run()
    rows = res.events()
    assert totem_check_all(rows, LIVE.get(name, set(sc.nodes))) == []
    assert len(res.events(kind="deliver")) > 1000


def test_restart_never_reuses_a_ring_id() -> None:
    res = Simulation(load_scenario(SCENARIOS / "restart.toml"), seed=1).run()
    b_views = [r["view"] for r in res.events(kind="view", node="B") if not r["transitional"]]
    seqs = [int(v.split(":")[0]) for v in b_views]
    assert seqs == sorted(set(seqs)) and len(seqs) >= 2


def test_partition_merges_back_into_one_ring() -> None:
    res = Simulation(load_scenario(SCENARIOS / "partition_merge.toml"), seed=1).run()
    regular = [r for r in res.events(kind="view") if not r["transitional"]]
    sizes = {len(r["members"]) for r in regular}
    assert {2, 3, 5} <= sizes  # split into 3 + 2, then merged
    last = {r["node"]: r["view"] for r in regular}
    assert len(set(last.values())) == 1


def test_saturated_ring_keeps_buffers_bounded(monkeypatch: Any) -> None:
    sc = load_scenario(SCENARIOS / "saturation.toml")
    peak = {"pending": 0, "frames": 0, "blocked": 0}
    handle = TotemMachine.handle

    def watched(self: TotemMachine, ev: Any, now: int) -> list[Any]:
        out = handle(self, ev, now)
        peak["pending"] = max(peak["pending"], len(self.packer))
        peak["frames"] = max(peak["frames"], len(self.log.msgs))
        peak["blocked"] += sum(1 for e in out if type(e) is Backpressure and e.blocked)
        return out

    monkeypatch.setattr(TotemMachine, "handle", watched)
    res = Simulation(sc, seed=1).run()
    max_pending = sc.settings["max_pending"]
    window = sc.settings["window_size"]
    assert peak["blocked"] > 0  # the load really saturated the ring
    assert peak["pending"] <= max_pending
    assert peak["frames"] <= 3 * window
    rows = res.events()
    assert totem_check_all(rows, set(sc.nodes)) == []
    # Nothing lost to overflow: every submitted message not still queued is delivered by all.
    submitted = {r["msg"] for r in rows if r["kind"] == "submit"}
    queued = {m[0] for mach in res.machines.values() for m in mach.packer.queue}
    for node in sc.nodes:
        got = {r["msg"] for r in res.events(kind="deliver", node=node)}
        assert len(submitted - got - queued) <= 2 * window * 5  # in flight at the end only
        assert got <= submitted
