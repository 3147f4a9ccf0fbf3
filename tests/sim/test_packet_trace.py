"""Packet tracing in the simulator: send, recv and drop rows naming their network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ringcast.sim import Simulation, parse_scenario
from ringcast.sim.scenario import ScenarioError

MS = 1_000_000
NETWORK_DROPS = {
    "unknown destination",
    "oversized datagram",
    "partition",
    "cut",
    "link down",
    "drop rule",
    "loss",
    "network loss",
    "corrupt",
}


def run(seed: int = 1, **doc: Any) -> Any:
    base: dict[str, Any] = {
        "protocol": "test_pinger",
        "nodes": ["A", "B", "C"],
        "duration": "1s",
        "network": {"latency": "2ms", "networks": 2},
        "trace_packets": True,
        "nemesis": [
            {"at": "200ms", "action": "link_down", "node": "B", "network": 1},
            {"at": "400ms", "action": "link_up", "node": "B", "network": 1},
        ],
    }
    base.update(doc)
    return Simulation(parse_scenario(base), seed).run()


def rows(res: Any) -> list[dict[str, Any]]:
    cols = res.recorder.cols
    return [{c: cols[c][k] for c in cols} for k in range(len(res.recorder))]


def test_send_and_recv_rows_name_the_network_each_packet_travelled_on() -> None:
    res = run()
    trace = rows(res)
    sends = [r for r in trace if r["kind"] == "send"]
    assert {r["node"] for r in sends} == {"A"}
    assert {r["network"] for r in sends} == {0, 1}
    # Multicast(EVERY_NETWORK): one row a network, the encoded body's size (the bytes
    # the simulator counts, to each of the two peers)
    first = [r for r in sends if r["t"] == 10 * MS]
    assert [r["network"] for r in first] == [0, 1]
    assert {r["detail"] for r in sends} == {'{"type":"Ping"}'}
    stats = {r["node"]: json.loads(r["detail"]) for r in trace if r["kind"] == "stats"}
    assert sum(2 * r["size"] for r in sends) == stats["A"]["sent_bytes"] > 0
    for node in ("B", "C"):
        recv = [r for r in trace if r["kind"] == "recv" and r["node"] == node]
        got = [r for r in trace if r["kind"] == "got" and r["node"] == node]
        assert recv and len(recv) == len(got)
        # the protocol sees the packet on the network the recv row names
        assert [r["network"] for r in recv] == [json.loads(g["detail"])["network"] for g in got]
        assert {r["detail"] for r in recv} == {'{"src":"A","type":"Ping"}'}
        assert all(r["network"] is None for r in got)  # a Record's network stays in detail
    during = [
        r["network"]
        for r in trace
        if r["kind"] == "recv" and r["node"] == "B" and 203 * MS <= r["t"] <= 400 * MS
    ]
    assert set(during) == {0}
    lost = [r for r in trace if r["kind"] == "drop"]
    assert lost and all(
        r["node"] == "A" and r["network"] == 1 and 200 * MS <= r["t"] < 400 * MS for r in lost
    )
    assert {r["detail"] for r in lost} == {'{"dst":"B","reason":"link down"}'}


def test_every_packet_the_network_loses_has_its_drop_row() -> None:
    res = run(
        duration="2s",
        network={
            "latency": "1ms",
            "networks": 2,
            "loss": 0.1,
            "loss_per_network": [0.0, 0.2],
            "corrupt": 0.05,
            "drop": [{"from": "A", "to": "C", "nth": 4}],
        },
        nemesis=[
            {"at": "200ms", "action": "link_down", "node": "B", "network": 1},
            {"at": "300ms", "action": "partition", "groups": [["A", "B"], ["C"]]},
            {"at": "500ms", "action": "heal"},
            {"at": "600ms", "action": "cut", "from": ["A"], "to": ["B"]},
            {"at": "800ms", "action": "heal"},
            {"at": "900ms", "action": "link_up", "node": "B", "network": 1},
        ],
    )
    trace = rows(res)
    drops = [r for r in trace if r["kind"] == "drop"]
    reasons = {json.loads(r["detail"])["reason"] for r in drops}
    assert reasons == NETWORK_DROPS - {"unknown destination", "oversized datagram"}
    assert all(r["network"] in (0, 1) for r in drops)
    assert {r["network"] for r in drops if "network loss" in r["detail"]} == {1}
    stats = {r["node"]: json.loads(r["detail"]) for r in trace if r["kind"] == "stats"}
    for node, s in stats.items():
        mine = [r for r in drops if r["node"] == node]
        assert len(mine) == s["lost"], node
    sent = sum(2 for r in trace if r["kind"] == "send")  # a multicast goes to 2 peers
    assert sent == stats["A"]["sent"]
    # a packet is dropped at the sender or arrives 1 ms later (no duplication here)
    end = 1990 * MS  # what was sent before has arrived by the end of the run
    early = [r for r in trace if r["t"] < end]
    sent = sum(2 for r in early if r["kind"] == "send")
    dropped = sum(1 for r in early if r["kind"] == "drop")
    assert sum(1 for r in early if r["kind"] == "recv") == sent - dropped


def test_packet_tracing_adds_rows_and_changes_nothing_else() -> None:
    with_packets = rows(run(network={"latency": "1ms", "networks": 2, "loss": 0.2}))
    without = rows(run(network={"latency": "1ms", "networks": 2, "loss": 0.2}, trace_packets=False))
    assert not [r for r in without if r["kind"] in ("send", "recv", "drop")]
    assert all(r["network"] is None for r in without)
    keep = [
        {k: v for k, v in r.items() if k != "i"}
        for r in with_packets
        if r["kind"] not in ("send", "recv", "drop")
    ]
    assert keep == [{k: v for k, v in r.items() if k != "i"} for r in without]


def test_packet_drops_outside_packet_tracing_name_their_network() -> None:
    res = run(
        protocol="basic",
        trace_packets=False,
        nemesis=[],
        network={"latency": "1ms", "max_datagram": 500},
        workload=[{"nodes": ["A"], "rate": 10, "count": 4, "size": 1000, "order": "fifo"}],
    )
    drops = [r for r in rows(res) if r["kind"] == "drop"]
    assert drops and all(r["network"] == 0 for r in drops)
    assert all(json.loads(r["detail"])["reason"] in NETWORK_DROPS for r in drops)
    assert not [r for r in rows(res) if r["kind"] in ("send", "recv")]


def test_trace_packets_must_be_a_boolean() -> None:
    with pytest.raises(ScenarioError, match="trace_packets: expected true or false"):
        run(trace_packets="yes")
