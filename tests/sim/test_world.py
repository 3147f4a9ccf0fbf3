"""The simulator's network model, nemesis, workload and host plumbing."""

from __future__ import annotations

from typing import Any

from ringcast.sim import Simulation, parse_scenario

MS = 1_000_000


def run(seed: int = 1, **doc: Any) -> Any:
    base: dict[str, Any] = {
        "protocol": "test_pinger",
        "nodes": ["A", "B", "C"],
        "duration": "1s",
        "network": {"latency": "2ms"},
    }
    base.update(doc)
    return Simulation(parse_scenario(base), seed).run()


def got(res: Any, node: str) -> list[dict[str, Any]]:
    return res.events("got", node)


def test_constant_latency_is_exact() -> None:
    res = run()
    rows = got(res, "B")
    assert len(rows) == 99  # pings at 10, 20, ... 990 ms (the one at 1000ms arrives after the end)
    assert [r["t"] for r in rows] == [(10 * k + 2) * MS for k in range(1, 100)]
    assert [r["detail"]["seq"] for r in rows] == list(range(1, 100))


def test_loss_and_duplication_rates() -> None:
    res = run(duration="10s", network={"latency": "1ms", "loss": 0.2, "duplication": 0.1})
    sent = 999 * 2
    received = len(got(res, "B")) + len(got(res, "C"))
    lost = sent * 0.2
    assert abs(received - (sent - lost) * 1.1) < 0.05 * sent
    seqs = [r["detail"]["seq"] for r in got(res, "B")]
    assert len(seqs) > len(set(seqs))  # some arrived twice


def test_reordering_happens_only_when_asked() -> None:
    res = run(network={"latency": "1ms", "reorder": 0.3, "reorder_delay": "30ms"})
    seqs = [r["detail"]["seq"] for r in got(res, "B")]
    assert seqs != sorted(seqs) and sorted(seqs) == list(range(1, len(seqs) + 1))


def test_partition_and_heal() -> None:
    res = run(
        nemesis=[
            {"at": "300ms", "action": "partition", "groups": [["A", "B"], ["C"]]},
            {"at": "600ms", "action": "heal"},
        ]
    )
    c = [r["t"] for r in got(res, "C")]
    assert not [t for t in c if 303 * MS <= t <= 600 * MS]
    assert [t for t in c if t > 600 * MS]
    b = [r["t"] for r in got(res, "B")]
    assert [t for t in b if 303 * MS <= t <= 600 * MS]
    faults = res.events("fault")
    assert {f["node"] for f in faults if f["detail"]["action"] == "partition"} == {"A", "B", "C"}


def test_link_down_on_one_network_only() -> None:
    res = run(
        network={"latency": "1ms", "networks": 2},
        nemesis=[
            {"at": "200ms", "action": "link_down", "node": "B", "network": 1},
            {"at": "400ms", "action": "link_up", "node": "B", "network": 1},
        ],
    )
    rows = got(res, "B")
    during = {r["detail"]["network"] for r in rows if 202 * MS <= r["t"] <= 400 * MS}
    after = {r["detail"]["network"] for r in rows if r["t"] > 402 * MS}
    assert during == {0} and after == {0, 1}


def test_drop_rule_drops_exactly_the_nth_message() -> None:
    res = run(
        network={"latency": "1ms", "drop": [{"from": "A", "to": "B", "nth": 3, "match": "Ping"}]}
    )
    seqs = [r["detail"]["seq"] for r in got(res, "B")]
    assert 3 not in seqs and 2 in seqs and 4 in seqs
    assert 3 in [r["detail"]["seq"] for r in got(res, "C")]


def test_pause_queues_and_resume_delivers_late() -> None:
    res = run(
        nemesis=[
            {"at": "300ms", "action": "pause", "node": "B"},
            {"at": "500ms", "action": "resume", "node": "B"},
        ]
    )
    rows = got(res, "B")
    assert not [r for r in rows if 300 * MS < r["t"] < 500 * MS]
    burst = [r for r in rows if r["t"] == 500 * MS]
    assert len(burst) == 20  # every ping sent while B was stalled, handled at resume
    assert [r["detail"]["seq"] for r in rows] == list(range(1, 100))


def test_crash_loses_timers_and_restart_keeps_storage() -> None:
    res = run(
        nemesis=[
            {"at": "300ms", "action": "crash", "node": "A"},
            {"at": "500ms", "action": "restart", "node": "A"},
        ]
    )
    times = [r["t"] for r in got(res, "B")]
    assert not [t for t in times if 303 * MS <= t < 510 * MS]
    boots = [r["detail"]["boots"] for r in res.events("boot", "A")]
    assert boots == [1, 2]
    seqs = [r["detail"]["seq"] for r in got(res, "B")]
    assert seqs[seqs.index(29) + 1] == 1  # volatile state (the ping counter) was lost


def test_crashed_node_receives_nothing() -> None:
    res = run(nemesis=[{"at": "300ms", "action": "crash", "node": "B"}])
    assert max(r["t"] for r in got(res, "B")) < 300 * MS
    assert res.events("stats", "B")[0]["detail"]["state"] == "crashed"


def test_join_and_leave() -> None:
    res = run(
        joiners=["D"],
        nemesis=[
            {"at": "400ms", "action": "join", "node": "D"},
            {"at": "600ms", "action": "leave", "node": "C"},
        ],
    )
    boot = res.events("boot", "D")
    assert boot[0]["t"] == 400 * MS and boot[0]["detail"]["joining"] is True
    assert min(r["t"] for r in got(res, "D")) > 400 * MS
    assert res.events("stopping", "C")[0]["t"] == 600 * MS
    assert max(r["t"] for r in got(res, "C")) < 600 * MS


def test_backpressure_holds_the_workload_without_losing_submits() -> None:
    res = run(
        protocol="test_queue",
        settings={"bound": 3},
        network={},
        workload=[{"nodes": ["A"], "rate": 1000, "count": 40}],
    )
    assert not res.events("overflow")
    assert [e["msg"] for e in res.events("submit", "A")] == [f"A:{i}" for i in range(1, 41)]
    assert [e["msg"] for e in res.events("deliver", "A")] == [f"A:{i}" for i in range(1, 41)]
    # 40 messages drained at 5ms each: the workload was held back, not run at 1000/s.
    assert res.events("submit", "A")[-1]["t"] > 150 * MS


def test_lock_plumbing_and_release_on_crash() -> None:
    res = run(
        protocol="test_queue",
        network={},
        workload=[{"nodes": ["A"], "kind": "lock", "rate": 10, "hold": "20ms", "count": 3}],
        nemesis=[{"at": "205ms", "action": "crash", "node": "A"}],
    )
    ops = [(e["t"] // MS, e["detail"]["op"]) for e in res.events("lock", "A")]
    assert ops == [
        (0, "requested"),
        (0, "granted"),
        (20, "released"),
        (100, "requested"),
        (100, "granted"),
        (120, "released"),
        (200, "requested"),
        (200, "granted"),
        (205, "released"),
    ]
    assert res.events("lock", "A")[-1]["detail"]["reason"] == "crashed"


def test_trace_indices_and_summary() -> None:
    res = run()
    table = res.table()
    for node in ("A", "B", "C"):
        idx = [r["i"] for r in res.events(node=node)]
        assert idx == list(range(len(idx)))
    assert table.num_rows == res.summary["events"]
    assert res.summary["views_installed"] == {"A": 0, "B": 0, "C": 0}
    assert res.summary["messages_sent"] == 99 * 2 + 2  # 100th ping is sent at exactly 1s


def test_same_seed_same_trace_other_seed_other_trace() -> None:
    doc = {
        "network": {
            "latency": {"dist": "exponential", "mean": "1ms", "floor": "100us"},
            "loss": 0.1,
        }
    }
    a, b, c = run(7, **doc).table(), run(7, **doc).table(), run(8, **doc).table()
    assert a.equals(b)
    assert not a.equals(c)


def test_oversized_datagrams_are_dropped_like_udp() -> None:
    res = run(
        protocol="basic",
        network={"latency": "1ms", "max_datagram": 500},
        workload=[{"nodes": ["A"], "rate": 10, "count": 4, "size": 1000, "order": "fifo"}],
    )
    drops = [e for e in res.events("drop", "A") if e["detail"]["reason"] == "oversized datagram"]
    assert drops and all(e["detail"]["bytes"] > 500 for e in drops)
    assert not res.events("deliver", "B")  # nothing that large got through
    ok = run(
        protocol="basic",
        network={"latency": "1ms"},
        workload=[{"nodes": ["A"], "rate": 10, "count": 4, "size": 1000, "order": "fifo"}],
    )
    assert len(ok.events("deliver", "B")) == 4


def test_cut_is_one_way_until_heal() -> None:
    res = run(
        nemesis=[
            {"at": "300ms", "action": "cut", "from": ["A"], "to": ["B"]},
            {"at": "600ms", "action": "heal"},
        ]
    )
    b = [r["t"] for r in got(res, "B")]
    assert not [t for t in b if 303 * MS <= t <= 600 * MS]
    assert [t for t in b if t > 600 * MS]
    c = [r["t"] for r in got(res, "C")]
    assert [t for t in c if 303 * MS <= t <= 600 * MS]  # only A -> B was cut
    cut = [f for f in res.events("fault") if f["detail"]["action"] == "cut"]
    assert {f["node"] for f in cut} == {"A", "B"}


def test_leave_with_linger_stays_up_then_is_gone() -> None:
    res = run(nemesis=[{"at": "600ms", "action": "leave", "node": "C", "linger": "100ms"}])
    assert res.events("stopping", "C")[0]["t"] == 600 * MS
    c = [r["t"] for r in got(res, "C")]
    assert [t for t in c if 600 * MS < t <= 700 * MS]
    assert max(c) <= 700 * MS
    (stats,) = res.events("stats", "C")
    assert stats["detail"]["state"] == "left"


def test_cut_names_unknown_nodes() -> None:
    import pytest

    from ringcast.sim.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=r"nemesis\[0\].to.*unknown node 'Z'"):
        run(nemesis=[{"at": "1ms", "action": "cut", "from": ["A"], "to": ["Z"]}])


def test_a_saturating_workload_submits_as_fast_as_flow_control_allows() -> None:
    """``rate = 0``: bursts of SATURATING_BURST a SATURATING_TICK while the protocol does
    not hold the sender back; Tribes' window (256 frames unacknowledged a peer) does."""
    from ringcast.sim.world import SATURATING_BURST, SATURATING_TICK

    def submits(**network: Any) -> dict[str, int]:
        doc = {
            "protocol": "tribes",
            "nodes": ["A", "B", "C"],
            "duration": "300ms",
            "network": {"latency": "1ms", **network},
            "workload": [{"nodes": ["A"], "rate": 0, "size": 10, "start": "100ms"}],
        }
        res = Simulation(parse_scenario(doc), 3).run()
        return {n: len(res.events("submit", n)) for n in ("A", "B", "C")}

    ticks = 200 * MS // SATURATING_TICK + 1
    free = submits()
    assert free == submits()  # deterministic
    assert free["B"] == free["C"] == 0
    assert 20 * ticks < free["A"] <= SATURATING_BURST * ticks
    # B and C hear nothing from A: A's frames to them stay unacknowledged and its
    # window holds the workload back (until A gives up on them and forms a view alone)
    held = submits(
        links=[{"from": "A", "to": "B", "loss": 1.0}, {"from": "A", "to": "C", "loss": 1.0}]
    )
    assert 0 < held["A"] < free["A"] // 10
