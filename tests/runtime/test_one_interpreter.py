"""One effect interpreter: a simulated run's effects, carried out again by the runtime
host's adapter (a real NodeHost writing its rotating trace log), give the trace rows
the simulator wrote, column by column (every column but the host clocks ``t``/``i``),
the ``network`` of packet rows included."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ringcast.core.interpreter import Interpreter
from ringcast.protocols import registry
from ringcast.runtime import Group
from ringcast.sim import Simulation, load_scenario, parse_scenario
from ringcast.sim.scenario import Scenario
from ringcast.trace.reader import read_trace

from .conftest import make_config, until

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ("kind", "msg", "order", "view", "members", "transitional", "size", "detail", "network")
HOST_OWNED = {"fault", "stats"}  # the host's own rows: crashes, partitions, closing counters


class _Silent:
    """Stands in for the protocol inside the runtime host: the effects are replayed."""

    def __init__(self, ctx: Any):
        self.node_id = ctx.node_id

    def handle(self, event: Any, now: int) -> list[Any]:
        return []


SILENT = "test_replay"
if SILENT not in registry.names():
    registry.register(
        registry.ProtocolSpec(SILENT, _Silent, doc="replays recorded effects", networks=None)
    )


def _rrp_one_link() -> Scenario:
    """scenarios/totem/rrp_one_link.toml (passive redundant ring, B's link on network 1
    pulled at 1 s), cut to 1.5 s so that the test stays short."""
    doc = tomllib.loads((ROOT / "scenarios/totem/rrp_one_link.toml").read_text())
    doc["duration"] = "1500ms"
    for w in doc["workload"]:
        w["duration"] = "1400ms"
    doc["nemesis"] = [a for a in doc["nemesis"] if a["action"] == "link_down"]
    return parse_scenario(doc, "rrp_one_link.toml")


def _record(
    scenario: Scenario, seed: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, dict[str, list[tuple[Any, ...]]]]:
    """Run ``scenario``, keeping each node's interpreter calls in order: the effects
    it carried out and the packets the simulator handed in (packet tracing)."""
    stream: dict[str, list[tuple[Any, ...]]] = {}
    apply, packet_in = Interpreter.apply, Interpreter.packet_in

    def spy_apply(self: Interpreter, effects: list[Any], now: int) -> None:
        stream.setdefault(self.node_id, []).append(("apply", list(effects), now))
        apply(self, effects, now)

    def spy_in(self: Interpreter, src: str, msg: Any, network: int, now: int) -> None:
        stream.setdefault(self.node_id, []).append(("in", src, msg, network, now))
        packet_in(self, src, msg, network, now)

    monkeypatch.setattr(Interpreter, "apply", spy_apply)
    monkeypatch.setattr(Interpreter, "packet_in", spy_in)
    res = Simulation(scenario, seed=seed).run()
    monkeypatch.setattr(Interpreter, "apply", apply)
    monkeypatch.setattr(Interpreter, "packet_in", packet_in)
    return res, stream


def _interpreter_row(kind: str, detail: str | None, network: int | None) -> bool:
    """Not a row the simulator writes by itself: its own kinds, and the drops of
    packets its network model refused or lost (the interpreter's one packet drop is
    that of an unknown network)."""
    if kind in HOST_OWNED:
        return False
    return not (kind == "drop" and network is not None and "unknown network" not in str(detail))


def _sim_rows(res: Any, node: str) -> list[tuple[Any, ...]]:
    cols = res.recorder.cols
    out = []
    for k in range(len(cols["kind"])):
        if cols["node"][k] == node and _interpreter_row(
            cols["kind"][k], cols["detail"][k], cols["network"][k]
        ):
            out.append(tuple(cols[c][k] for c in COLUMNS))
    return out


def _runtime_rows(
    tmp: Path, node: str, calls: list[tuple[Any, ...]], networks: int, packets: bool
) -> list[Any]:
    cfg = make_config(
        tmp,
        [node],
        SILENT,
        trace_format="parquet",
        networks=networks,
        trace_packets=packets,
    )

    async def main() -> None:
        async with Group.join(cfg, node, wait_view=False) as g:
            host = g.host
            for call in calls:
                if call[0] == "apply":
                    host._apply(call[1], call[2])
                else:  # what the host's datagram handler does for a packet it accepts
                    host.interp.packet_in(*call[1:])

    asyncio.run(main())
    assert cfg.trace_dir is not None
    table = read_trace(cfg.trace_dir).sort_by("i")
    rows = table.to_pydict()
    return [
        tuple(rows[c][k] for c in COLUMNS)
        for k in range(table.num_rows)
        if rows["kind"][k] not in HOST_OWNED
    ]


@pytest.mark.parametrize(
    ("scenario", "seed", "packets"),
    [
        ("scenarios/raincore/lock_contention.toml", 1, False),
        ("scenarios/raincore/fig13_crash.toml", 1, False),
        ("scenarios/totem/partition_merge.toml", 2, False),
        ("scenarios/raincore/fig13_crash.toml", 1, True),
        ("rrp_one_link", 1, True),
    ],
)
def test_both_hosts_write_the_same_rows_for_the_same_effects(
    scenario: str, seed: int, packets: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc = _rrp_one_link() if scenario == "rrp_one_link" else load_scenario(ROOT / scenario)
    sc = dataclasses.replace(sc, trace_packets=packets)
    res, stream = _record(sc, seed, monkeypatch)
    networks = sc.network.networks
    for node, calls in sorted(stream.items()):
        sim = _sim_rows(res, node)
        assert sim, f"{node} wrote no rows"
        got = _runtime_rows(tmp_path / node, node, calls, networks, packets)
        # The simulator's workload records submits and lock requests through the same
        # interpreter calls the runtime's Group API makes; replaying effects alone
        # leaves those two host-initiated rows out, so compare the rest.
        initiated = [r for r in sim if r[0] == "submit" or (r[0] == "lock" and "requested" in r[7])]
        sim = [r for r in sim if r not in initiated]
        assert len(got) == len(sim), node
        for col, name in enumerate(COLUMNS):
            assert [r[col] for r in got] == [r[col] for r in sim], f"{node}: column {name}"
        nets = {r[-1] for r in sim}
        if not packets:
            assert nets == {None}, f"{node}: a network outside packet tracing"
        else:
            # every packet row names its network; with two, both carried packets
            assert {r[0] for r in sim if r[-1] is not None} >= {"send", "recv"}
            assert all(r[-1] is not None for r in sim if r[0] in ("send", "recv"))
            assert nets - {None} == set(range(networks)), node


def test_real_packets_are_traced_with_their_network(tmp_path: Path) -> None:
    """Two nodes on two loopback networks, packet tracing on: every node's trace has
    send rows for both networks (heartbeats go out on every network) and recv
    rows, from the other node, naming the network the datagram came in on."""
    cfg = make_config(
        tmp_path, ["A", "B"], "basic", trace_format="parquet", networks=2, trace_packets=True
    )

    async def main() -> None:
        async with Group.join(cfg, "A") as a, Group.join(cfg, "B") as b:
            await asyncio.gather(
                *(g.wait_view(lambda v: set(v.members) == {"A", "B"}, 10) for g in (a, b))
            )
            for k in range(3):
                await a.multicast(f"m{k}".encode())

    asyncio.run(main())
    assert cfg.trace_dir is not None
    trace = read_trace(cfg.trace_dir).to_pylist()
    for me, other in (("A", "B"), ("B", "A")):
        mine = [r for r in trace if r["node"] == me]
        sends = [r for r in mine if r["kind"] == "send"]
        recvs = [r for r in mine if r["kind"] == "recv"]
        assert {r["network"] for r in sends} == {0, 1}, me
        assert recvs and {r["network"] for r in recvs} <= {0, 1}, me
        assert all(f'"src":"{other}"' in r["detail"] for r in recvs)
        assert all(r["size"] is not None for r in sends + recvs)  # the encoded body
        others = [r for r in mine if r["kind"] not in ("send", "recv", "drop")]
        assert all(r["network"] is None for r in others)


def test_refused_datagrams_are_drop_rows_naming_their_network(tmp_path: Path) -> None:
    """With packet tracing, a datagram the host refuses before the protocol sees it
    (here: garbage on network 1) is a drop row with its reason and network."""
    cfg = make_config(
        tmp_path, ["A"], "basic", trace_format="parquet", networks=2, trace_packets=True
    )
    target = cfg.node("A").addresses[1]

    async def main() -> None:
        async with Group.join(cfg, "A") as g:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                for k in range(3):
                    s.sendto(b"\x00garbage %d" % k, target)
            await until(lambda: sum(g.host.metrics.drops.values()) >= 3, 10, "3 drops", g)

    asyncio.run(main())
    assert cfg.trace_dir is not None
    drops = [r for r in read_trace(cfg.trace_dir).to_pylist() if r["kind"] == "drop"]
    assert len(drops) == 3
    assert {r["network"] for r in drops} == {1}
    assert all('"reason":' in r["detail"] for r in drops)
