"""The nemesis's nftables loaders: in-process threads in each namespace (libnftables)
and the ``nft`` process fallback load the same rules, where they are asked to."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ringcast.live import nft
from ringcast.live.firewall import NetState, ruleset, switch_ruleset
from ringcast.live.netns import apply_nft, ip, lab
from ringcast.sim.scenario import NetworkModel, parse_scenario

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nft") is None,
    reason="needs root, iproute2 and nftables",
)


def _listed(ns: str) -> str:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "nft", "list", "table", "inet", "rclive"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@pytest.mark.parametrize("in_process", [True, False])
def test_both_loaders_put_the_rules_in_each_namespace(
    monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    if not in_process:

        def no_library() -> None:
            raise OSError("libnftables.so.1: cannot open shared object file")

        monkeypatch.setattr(nft, "_library", no_library)
    with lab(["A", "B", "C"], ["10.97.0"], prefix="rclt") as the_lab:
        loader = nft.nft_loader(list(the_lab.hosts.values()))
        assert isinstance(loader, nft._Threads) is in_process
        try:
            state = NetState()
            state.partition([["A"], ["B", "C"]], ["A", "B", "C"])
            addresses = {n: [the_lab.address(n)] for n in the_lab.hosts}
            texts = {the_lab.hosts[n]: ruleset(n, state, NetworkModel(), addresses) for n in "ABC"}
            before = time.monotonic_ns()
            held = loader.apply(texts, time.monotonic_ns)
            assert set(held) == set(texts) and all(t >= before for t in held.values())
            assert "ip saddr { 10.97.0.2, 10.97.0.3 } drop" in _listed(the_lab.hosts["A"])
            assert "ip saddr 10.97.0.1 drop" in _listed(the_lab.hosts["B"])
            state.heal()
            loader.apply(
                {the_lab.hosts["A"]: ruleset("A", state, NetworkModel(), addresses)},
                time.monotonic_ns,
            )
            assert "saddr" not in _listed(the_lab.hosts["A"])
            assert "saddr" in _listed(the_lab.hosts["B"])  # only A's was asked
        finally:
            loader.close()


def _counted(ns: str) -> dict[str, int]:
    """Packets the ``rcltest`` table's counters saw, by the source address of each rule."""
    text = subprocess.run(
        ["ip", "netns", "exec", ns, "nft", "-j", "list", "table", "inet", "rcltest"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts = {}
    for item in json.loads(text)["nftables"]:
        rule = item.get("rule")
        if rule is None:
            continue
        saddr = next(e["match"]["right"] for e in rule["expr"] if "match" in e)
        counts[saddr] = next(e["counter"]["packets"] for e in rule["expr"] if "counter" in e)
    return counts


def test_loss_and_duplication_on_links_reach_the_receiver() -> None:
    """B -> A loses half its datagrams (the receiver's rules), C -> A has each one copied
    (the switch's netdev chain): what arrives past A's rules shows it; nothing is left
    once the lab is gone."""
    sent = 200
    model = parse_scenario(
        {
            "name": "links",
            "protocol": "tribes",
            "nodes": ["A", "B", "C"],
            "duration": "1s",
            "network": {
                "links": [
                    {"from": "B", "to": "A", "loss": 0.5},
                    {"from": "C", "to": "A", "duplication": 1.0},
                ]
            },
        },
        "links.toml",
    ).network
    with lab(["A", "B", "C"], ["10.97.0"], prefix="rclt") as the_lab:
        names = [the_lab.switch, *the_lab.hosts.values()]
        a = the_lab.hosts["A"]
        addresses = {n: [the_lab.address(n)] for n in the_lab.hosts}
        ports = {n: [the_lab.port(n)] for n in the_lab.hosts}
        dup = switch_ruleset(model, addresses, ports)
        assert dup is not None
        apply_nft({the_lab.switch: dup, a: ruleset("A", NetState(), model, addresses)}, int)
        # what passes A's rclive table (priority 0) is counted after it (priority 10)
        counting = "".join(
            f"ip saddr {the_lab.address(n)} udp dport 9999 counter; " for n in ("B", "C")
        )
        apply_nft(
            {
                a: "table inet rcltest { chain input { type filter hook input priority 10; "
                f"policy accept; {counting}}}; }}\n"
            },
            int,
        )
        mac = json.loads(
            subprocess.run(
                ["ip", "-n", a, "-j", "link", "show", "eth0"],
                capture_output=True,
                check=True,
                text=True,
            ).stdout
        )[0]["address"]
        send = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for _ in range({sent}): s.sendto(b'x', (sys.argv[1], 9999))\n"
        )
        for n in ("B", "C"):
            ns = the_lab.hosts[n]
            # A's address resolved ahead: no datagram waits on ARP (nor is lost there)
            ip("-n", ns, "neigh", "replace", the_lab.address("A"), "lladdr", mac, "dev", "eth0")
            subprocess.run(
                ["ip", "netns", "exec", ns, sys.executable, "-c", send, the_lab.address("A")],
                check=True,
                timeout=30,
            )
        counts = _counted(a)
        assert counts[the_lab.address("C")] == 2 * sent
        # half lost: 200 fair draws land outside 50..150 with odds below 1e-12
        assert sent // 4 <= counts[the_lab.address("B")] <= 3 * sent // 4
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(name in listed for name in names)
