"""The live nemesis's delay and reordering: the delay box's draws (the simulator's), the
tc netem command lines used where the kernel has netem, and the box itself carrying
datagrams between namespaces (root only).

The timing assertions are lower bounds only: a datagram on a link of latency L never
arrives sooner than L; how much later depends on the machine's load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ringcast.live import delaybox
from ringcast.live.delaybox import LinkModel, Plan, Port, draw, link_models
from ringcast.live.firewall import NetState, ruleset
from ringcast.live.netem import netem_commands, netem_plan
from ringcast.live.netns import apply_nft, lab
from ringcast.sim.latency import Latency
from ringcast.sim.rng import stream
from ringcast.sim.scenario import NetworkModel, parse_scenario

NODES = ["A", "B", "C"]


def _model(network: dict):  # type: ignore[no-untyped-def]
    doc = {"name": "d", "protocol": "tribes", "nodes": NODES, "duration": "1s"}
    return parse_scenario({**doc, "network": network}, "d.toml").network


def test_a_link_resolves_as_in_the_simulator_and_draws_its_formula() -> None:
    model = _model(
        {
            "latency": {"dist": "uniform", "low": "1ms", "high": "2ms"},
            "reorder": 0.5,
            "reorder_delay": "4ms",
            "duplication": 0.25,
            "links": [{"from": "A", "to": "B", "latency": "7ms", "duplication": 0.0}],
        }
    )
    links = link_models(model, NODES)
    assert set(links) == {(s, d) for s in NODES for d in NODES if s != d}
    ab, ba = links[("A", "B")], links[("B", "A")]
    assert ab.latency == Latency("constant", value=7_000_000) and ab.duplication == 0.0
    assert ba.latency == model.latency and ba.duplication == 0.25
    assert ab.reorder == 0.5 and ab.reorder_delay == 4_000_000
    # the simulator's draw (Simulation._send): copies, then per copy latency + reorder
    rng, mirror = stream(1, "x"), stream(1, "x")
    for _ in range(500):
        got = draw(ba, rng)
        copies = 2 if mirror.random() < 0.25 else 1
        want = []
        for _ in range(copies):
            d = ba.latency.sample(mirror)
            if mirror.random() < 0.5:
                d += mirror.randint(0, 4_000_000)
            want.append(d)
        assert got == want
    zero = link_models(model, NODES, real_latency=True)[("A", "B")]
    assert zero.latency == delaybox.ZERO and zero.reorder == 0.5


def test_a_plan_survives_its_file(tmp_path: Path) -> None:
    plan = Plan(
        7,
        (Port("A", 0, "p1n0"), Port("B", 0, "p2n0")),
        link_models(_model({"latency": {"dist": "normal", "mean": "1ms", "stddev": "1us"}}), NODES),
    )
    delaybox.write_plan(plan, tmp_path / "plan.json")
    assert delaybox.read_plan(tmp_path / "plan.json") == plan


def test_netem_gets_each_receivers_latency_or_leaves_it_to_the_box() -> None:
    ports = {n: [f"p{k}n0", f"p{k}n1"] for k, n in enumerate(NODES, start=1)}
    plan = netem_plan(_model({"latency": {"dist": "uniform", "low": "1ms", "high": "3ms"}}), NODES)
    assert plan == {n: ["delay", "2000us", "1000us"] for n in NODES}
    cmds = netem_commands("tc", "sw", plan, ports)
    assert cmds[3][:9] == ["tc", "-n", "sw", "qdisc", "add", "dev", "p2n1", "root", "netem"]
    assert len(cmds) == 6 and cmds[3][9:] == ["delay", "2000us", "1000us"]
    assert netem_plan(_model({"latency": "1500us"}), NODES) == {
        n: ["delay", "1500us"] for n in NODES
    }
    normal = {"dist": "normal", "mean": "1ms", "stddev": "100us"}
    assert netem_plan(_model({"latency": normal}), NODES) == {
        n: ["delay", "1000us", "100us", "distribution", "normal"] for n in NODES
    }
    # a receiver whose every link has the same latency: per receiver, fine
    to_c = [{"from": s, "to": "C", "latency": "5ms"} for s in "AB"]
    assert netem_plan(_model({"links": to_c}), NODES) == {
        "A": ["delay", "1000us"],
        "B": ["delay", "1000us"],
        "C": ["delay", "5000us"],
    }
    assert netem_plan(_model({"latency": 0}), NODES) == {}
    # what netem cannot draw as the simulator does: the box
    assert netem_plan(_model({"reorder": 0.1}), NODES) is None
    assert netem_plan(_model({"links": to_c[:1]}), NODES) is None  # A->C differs from B->C
    expo = {"dist": "exponential", "mean": "1ms"}
    assert netem_plan(_model({"latency": expo}), NODES) is None
    assert netem_plan(_model({"latency": {**normal, "floor": "500us"}}), NODES) is None


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2"
)

RECEIVE = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9000))
s.settimeout(3)
print("bound", flush=True)
got = []
try:
    while len(got) < int(sys.argv[2]):
        got.append((s.recv(100).decode(), time.monotonic_ns()))
except socket.timeout:
    pass
for d, t in got:
    print(d, t)
"""

SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(f"{i} {time.monotonic_ns()}".encode(), (sys.argv[1], 9000))
    time.sleep(0.001)
"""


def _carry(
    links: dict[tuple[str, str], LinkModel],
    count: int,
    tmp: Path,
    *,
    state: NetState | None = None,
    stats: dict[str, Any] | None = None,
) -> list[tuple[int, int]]:
    """Send ``count`` datagrams from A to B through a box with ``links``, 1 ms apart;
    ``(sequence number, one-way delay in ns)`` of each that arrived, in arrival order.
    ``state``: the live nemesis's rules for it in each node's namespace first;
    ``stats``: filled with the box's counters."""
    with lab(["A", "B"], ["10.96.0"], prefix="rcdb", unbridged={0}) as the_lab:
        ns = the_lab.hosts
        if state is not None:
            addresses = {n: [the_lab.address(n)] for n in "AB"}
            texts = {ns[n]: ruleset(n, state, NetworkModel(), addresses) for n in "AB"}
            apply_nft(texts, time.monotonic_ns)
        ports = tuple(Port(n, 0, the_lab.port(n)) for n in "AB")
        box = delaybox.start(Plan(1, ports, links), the_lab.switch, tmp / "box")
        try:
            rx = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns["B"],
                    sys.executable,
                    "-c",
                    RECEIVE,
                    the_lab.address("B"),
                    str(count),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
        except BaseException:
            delaybox.stop(box)
            raise
        try:
            assert rx.stdout is not None and rx.stdout.readline() == "bound\n"
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns["A"],
                    sys.executable,
                    "-c",
                    SEND,
                    the_lab.address("B"),
                    str(count),
                ],
                check=True,
                timeout=60,
            )
            out, _ = rx.communicate(timeout=60)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()
            counted = delaybox.stop(box, tmp / "box")
    assert counted is not None and counted["send_errors"] == 0
    if stats is not None:
        stats.update(counted)
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [(int(i), int(t) - int(sent)) for i, sent, t in rows]


@needs_root
def test_a_datagram_arrives_no_sooner_than_its_links_latency(tmp_path: Path) -> None:
    lat = Latency("uniform", low=15_000_000, high=25_000_000)
    links = {("A", "B"): LinkModel(lat), ("B", "A"): LinkModel(lat)}
    got = _carry(links, 100, tmp_path)
    assert len(got) == 100
    assert min(d for _, d in got) >= 15_000_000


@needs_root
def test_reordering_holds_datagrams_back_past_later_ones(tmp_path: Path) -> None:
    lat = Latency("constant", value=2_000_000)
    ab = LinkModel(lat, reorder=0.5, reorder_delay=20_000_000)
    got = _carry({("A", "B"): ab, ("B", "A"): LinkModel(lat)}, 100, tmp_path)
    seq = [i for i, _ in got]
    assert sorted(seq) == list(range(100))
    assert seq != sorted(seq)  # overtaken: some arrive after later ones
    assert min(d for _, d in got) >= 2_000_000


@needs_root
def test_a_partition_drops_what_the_box_carries(tmp_path: Path) -> None:
    """The nemesis's rules act at the receiver's input, after the box: a partition
    holds for frames the box delivers (here, every one of them)."""
    state = NetState()
    state.partition([["A"], ["B"]], ["A", "B"])
    lat = LinkModel(Latency("constant", value=1_000_000))
    stats: dict[str, Any] = {}
    got = _carry({("A", "B"): lat, ("B", "A"): lat}, 30, tmp_path, state=state, stats=stats)
    assert got == []
    assert stats["delayed"] >= 30  # carried, delayed, then dropped at B


@pytest.mark.parametrize(
    ("network", "real_latency", "netem", "shaping"),
    [
        ({}, True, False, "bridges"),  # the bridges' own latency, nothing to hold back
        ({"latency": 0}, False, False, "bridges"),
        ({}, False, False, "delaybox"),  # the default 1 ms, no netem here
        ({}, False, True, "netem"),
        ({"reorder": 0.1}, True, True, "delaybox"),  # netem cannot reorder as simulated
        ({"latency": {"dist": "exponential", "mean": "1ms"}}, False, True, "delaybox"),
    ],
)
def test_the_driver_chooses_how_to_delay(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    network: dict,
    real_latency: bool,
    netem: bool,
    shaping: str,
) -> None:
    from ringcast.live import driver

    monkeypatch.setattr(driver, "has_netem", lambda: netem)
    monkeypatch.setattr(driver.shutil, "which", lambda name: f"/usr/sbin/{name}")
    doc = {"name": "d", "protocol": "tribes", "nodes": NODES, "duration": "1s"}
    sc = parse_scenario({**doc, "network": network}, "d.toml")
    d = driver.Driver(sc, 1, tmp_path, real_latency=real_latency)
    assert d._shaping() == shaping
    if shaping == "netem":
        assert d.netem == {n: ["delay", "1000us"] for n in NODES}


@pytest.mark.parametrize("offload", [True, False])
def test_the_cluster_file_can_turn_udp_offload_off(tmp_path: Path, offload: bool) -> None:
    """Through the delay box each datagram is a frame of its own (its own draw)."""
    import tomllib

    from ringcast.runtime.config import parse_config, render_config

    text = render_config(
        name="d",
        protocol="tribes",
        nodes=[("A", ["10.0.0.1:5405"], None)],
        udp_offload=offload,
    )
    cfg = parse_config(tomllib.loads(text), base=tmp_path)
    assert cfg.udp_offload is offload
    assert ("udp_offload = false" in text) is not offload
