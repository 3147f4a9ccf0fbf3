"""The worked examples of the Totem paper and corosync's slides, bundled under
scenarios/totem/ and run in the simulator."""

from __future__ import annotations

from pathlib import Path

from ringcast.lab.reference import totem_check_all
from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "totem"


def test_p2_missing_m3_recovers_through_rtr() -> None:
    """The corosync Totem slides: P2 misses M3, puts aru = 2 and rtr = [3] on the token, P3
    rebroadcasts M3."""
    res = Simulation(load_scenario(SCENARIOS / "p2_missing_m3.toml"), seed=1).run()
    rows = res.events()
    asked = [
        r for r in rows if r["kind"] == "token" and r["node"] == "P2" and r["detail"]["rtr"] == 1
    ]
    assert asked, "P2 never asked for a retransmission"
    assert asked[0]["detail"]["aru"] == 2 and asked[0]["detail"]["seq"] == 3
    rtx = res.events(kind="retransmit")
    assert [(r["node"], r["detail"]["seq"]) for r in rtx] == [("P3", 3)]
    assert rtx[0]["t"] > asked[0]["t"]
    for node in ("P1", "P2", "P3", "P4"):
        got = [r["msg"] for r in res.events(kind="deliver", node=node)]
        assert got == ["P1:1", "P1:2", "P1:3"], node
    p2_m3 = next(r for r in res.events(kind="deliver", node="P2") if r["msg"] == "P1:3")
    assert p2_m3["t"] > rtx[0]["t"]
    assert totem_check_all(rows, {"P1", "P2", "P3", "P4"}) == []


def test_p4_joins_through_gather_commit_recovery() -> None:
    """The corosync Totem slides: P4 joins {P1, P2, P3}; alone in its transitional membership;
    seq + 4."""
    res = Simulation(load_scenario(SCENARIOS / "p4_join.toml"), seed=1).run()
    views = res.events(kind="view")
    regular = [v for v in views if not v["transitional"]]
    first = {v["view"] for v in regular if v["members"] == ["P1", "P2", "P3"]}
    assert len(first) == 1
    old = first.pop()
    final = [v for v in regular if v["members"] == ["P1", "P2", "P3", "P4"]]
    assert {v["node"] for v in final} == {"P1", "P2", "P3", "P4"}
    new = final[0]["view"]
    assert {v["view"] for v in final} == {new}
    assert int(new.split(":")[0]) == int(old.split(":")[0]) + 4
    trans = {v["node"]: v for v in views if v["transitional"] and v["view"].startswith(new + "/")}
    assert trans["P4"]["members"] == ["P4"]
    for n in ("P1", "P2", "P3"):
        assert trans[n]["members"] == ["P1", "P2", "P3"]
    # P4 went through Gather, Commit and Recovery before Operational, in that order.
    states = [r["detail"]["state"] for r in res.events(kind="state", node="P4")]
    assert states == ["Gather", "Commit", "Recovery", "Operational"]
    # The others left Operational for Gather on P4's join.
    p1 = [
        (r["detail"]["state"], r["detail"]["reason"]) for r in res.events(kind="state", node="P1")
    ]
    assert ("Gather", "join from P4") in p1
    # The new ring's seq was persisted.
    assert res.machines["P4"].highest_seq == int(new.split(":")[0])
    assert totem_check_all(res.events(), {"P1", "P2", "P3", "P4"}) == []
