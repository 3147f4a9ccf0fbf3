"""Raincore under saturation: every node submits 1 KB messages far above what the token
can carry (``scenarios/raincore/saturation.toml``, default settings).

The runs use a probe protocol: Raincore unchanged, with UDP's datagram size limit
applied to what it sends (a datagram larger than one UDP packet vanishes, as the
runtime's socket refuses it) and with each node's pending-submit queue sampled after
every event. Without a bound on the token's bytes, a token of 64 x 1 KB messages is
about 70 KB: it can never be delivered, the ring drops its members one by one, the
911s regenerate it, and nodes deliver nothing for seconds.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ringcast.core.codec import encode
from ringcast.core.effects import Backpressure, Effect, Record, Send
from ringcast.core.events import Event
from ringcast.core.machine import Machine, MachineContext
from ringcast.lab import reference as checks
from ringcast.protocols import registry
from ringcast.protocols.raincore import SETTINGS, SPEC, make_raincore
from ringcast.sim import Simulation
from ringcast.sim.scenario import Scenario, parse_scenario

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "raincore" / "saturation.toml"
UDP_MAX = 65_507 - 64  # largest UDP payload, less the runtime's envelope
SECOND = 1_000_000_000


class UdpProbe:
    """Raincore's stack, seen through a UDP socket; records queue sizes and flow control."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.node_id = inner.node_id
        self.max_pending = 0
        self.blocked_on = 0
        self.oversized = 0

    def handle(self, event: Event, now: int) -> list[Effect]:
        out = self.inner.handle(event, now)
        self.max_pending = max(self.max_pending, len(self.inner.upper.multicast.pending))
        kept: list[Effect] = []
        for eff in out:
            if type(eff) is Send and len(encode(eff.msg, sender=self.node_id)) > UDP_MAX:
                self.oversized += 1
                kept.append(Record.of("drop", reason="datagram larger than UDP allows"))
                continue
            if type(eff) is Backpressure and eff.blocked:
                self.blocked_on += 1
            kept.append(eff)
        return kept


def _probe(ctx: MachineContext) -> Machine:
    return UdpProbe(make_raincore(ctx))


PROBE = registry.register(
    registry.ProtocolSpec("raincore-udp-probe", _probe, settings=SPEC.settings)
)


def scenario(nodes: int, duration: str) -> Scenario:
    doc = tomllib.loads(SCENARIO.read_text())
    doc["nodes"] = doc["nodes"][:nodes]
    doc["duration"] = duration
    sc = parse_scenario(doc, SCENARIO.name)
    return replace(sc, protocol=PROBE.name)


class Run:
    def __init__(self, nodes: int, duration: str):
        self.sc = scenario(nodes, duration)
        res = Simulation(self.sc, seed=7).run()
        self.rows = res.events()
        self.probes: dict[str, UdpProbe] = res.machines  # type: ignore[assignment]
        self.seconds = self.sc.duration / SECOND

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["kind"] == kind]


@pytest.fixture(scope="module", params=[(5, "2s"), (3, "1s")], ids=["5nodes", "3nodes"])
def run(request: pytest.FixtureRequest) -> Run:
    return Run(*request.param)


def test_scenario_file_is_the_saturation_catalogue_entry() -> None:
    doc = tomllib.loads(SCENARIO.read_text())
    assert doc["protocol"] == "raincore" and len(doc["nodes"]) == 5
    assert "settings" not in doc  # the defaults must cope
    (wl,) = doc["workload"]
    assert wl["rate"] * len(doc["nodes"]) >= 25_000 and wl["size"] == 1024


def test_every_node_gets_a_fair_share_of_the_token(run: Run) -> None:
    nodes = run.sc.nodes
    for node in nodes:
        origins = Counter(r["msg"].split(":")[0] for r in run.kinds("deliver") if r["node"] == node)
        mean = sum(origins.values()) / len(nodes)
        assert mean > 0
        for origin in nodes:
            assert mean / 2 <= origins[origin] <= mean * 2, (node, dict(origins))


def test_no_node_goes_without_deliveries(run: Run) -> None:
    for node in run.sc.nodes:
        times = [r["t"] for r in run.kinds("deliver") if r["node"] == node]
        gaps = [b - a for a, b in zip([0, *times], [*times, run.sc.duration], strict=True)]
        assert max(gaps) < 50_000_000, node  # 50 ms


def test_throughput_per_node(run: Run) -> None:
    per_node = len(run.kinds("deliver")) / len(run.sc.nodes) / run.seconds
    # The failure guarded against: at most 64 messages a rotation of 5 x (5 ms + hop), 2,460/s on 5
    # nodes without the datagram limit and under 200/s with it.
    assert per_node > 5_000


def test_pending_queues_stay_bounded_by_backpressure(run: Run) -> None:
    bound = SETTINGS["max_pending"].default
    for node, probe in run.probes.items():
        assert probe.max_pending <= bound, node
        assert probe.blocked_on >= 1, node  # the workload did outrun the token
    submitted = len(run.kinds("submit"))
    assert submitted < 0.95 * 5000 * len(run.sc.nodes) * run.seconds  # submits were held back


def test_no_token_loss_or_view_change_under_saturation(run: Run) -> None:
    ops = Counter(r["detail"]["op"] for r in run.kinds("token"))
    assert set(ops) == {"created", "sent", "received"}, ops
    assert run.kinds("911") == [] and run.kinds("drop") == []
    assert all(p.oversized == 0 for p in run.probes.values())
    views = Counter(r["node"] for r in run.kinds("view"))
    assert views == dict.fromkeys(run.sc.nodes, 1)


def test_total_order_and_exactly_once_under_saturation(run: Run) -> None:
    assert checks.invariants(run.rows) == []
    assert checks.total_order(run.rows) == []
    assert checks.single_token(run.rows, run.sc.duration, []) == []
    assert (
        checks.convergence(run.rows, set(run.sc.nodes), on_members=True, keep_across_restart=True)
        == []
    )
    # Exactly once: every node delivered every message any node delivered, except those
    # still on the token at the end.
    delivered = {n: set() for n in run.sc.nodes}
    for r in run.kinds("deliver"):
        delivered[r["node"]].add(r["msg"])
    union = set().union(*delivered.values())
    for node, got in delivered.items():
        assert len(union - got) <= SETTINGS["max_token_messages"].default, node
