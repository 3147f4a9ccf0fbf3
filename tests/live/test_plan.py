"""What a live run refuses before it starts, and the nftables rules of its nemesis."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ringcast.live import tools
from ringcast.live.firewall import NetState, ruleset, switch_ruleset
from ringcast.live.plan import check_live
from ringcast.live.tools import LiveError
from ringcast.sim.scenario import parse_scenario

BASE = {
    "name": "p",
    "protocol": "tribes",
    "nodes": ["A", "B", "C"],
    "duration": "2s",
    "workload": [{"nodes": "all", "rate": 10}],
}


def _check(extra: dict, *, real_latency: bool = True, netem: bool = False) -> None:
    check_live(parse_scenario({**BASE, **extra}, "p.toml"), real_latency=real_latency, netem=netem)


def test_a_plain_scenario_is_accepted() -> None:
    _check({"nemesis": [{"at": "1s", "action": "crash", "node": "B"}]})


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            {"network": {"reorder": 0.1}},
            "p.toml: network.reorder: a live run cannot hold a message back to reorder it "
            "(this kernel has no tc netem)",
        ),
        ({"network": {"corrupt": 0.1}}, "network.corrupt"),
        (
            {"network": {"drop": [{"from": "A", "to": "B", "nth": 1}]}},
            "network.drop: a live run cannot drop the nth message",
        ),
        (
            {"network": {"links": [{"from": "A", "to": "B", "loss": 1.0, "match": "Token"}]}},
            "network.links[0].match",
        ),
        ({"network": {"max_datagram": 1000}}, "network.max_datagram"),
        (
            {"nemesis": [{"at": "1s", "action": "garble", "node": "A"}]},
            "nemesis (garble at 1s): a live run cannot apply 'garble'",
        ),
    ],
)
def test_what_the_live_nemesis_cannot_apply_is_refused(extra: dict, says: str) -> None:
    with pytest.raises(LiveError) as e:
        _check(extra)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_latency_needs_netem_or_the_real_latency_flag() -> None:
    with pytest.raises(LiveError, match=r"no tc netem.*--real-latency"):
        _check({}, real_latency=False, netem=False)
    with pytest.raises(LiveError, match="does not drive tc netem yet"):
        _check({"network": {"reorder": 0.5}}, netem=True)


def test_not_root_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LiveError, match=r"^live runs need root"):
        tools.require_root()


def test_a_missing_tool_without_apt_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name: None if name in ("nft", "apt-get") else real(name)
    )
    with pytest.raises(LiveError, match=r"^live runs need nft \(Debian package nftables\)"):
        tools.ensure_tools(("ip", "nft"))


ADDR = {"A": ["10.9.0.1", "10.9.1.1"], "B": ["10.9.0.2", "10.9.1.2"], "C": ["10.9.0.3", "10.9.1.3"]}


def _model(**network: object):  # type: ignore[no-untyped-def]
    return parse_scenario({**BASE, "network": network}, "p.toml").network


def test_rules_of_a_partition_a_cut_and_a_link_down() -> None:
    st = NetState()
    st.partition([["A"], ["B", "C"]], ["A", "B", "C"])
    rules_a = ruleset("A", st, _model(networks=2), ADDR)
    assert "ip saddr { 10.9.0.2, 10.9.1.2, 10.9.0.3, 10.9.1.3 } drop" in rules_a
    rules_b = ruleset("B", st, _model(networks=2), ADDR)
    assert "ip saddr { 10.9.0.1, 10.9.1.1 } drop" in rules_b
    st.heal()
    st.cuts.add(("A", "B"))  # one way: B stops hearing A, A still hears B
    assert "ip saddr { 10.9.0.1, 10.9.1.1 } drop" in ruleset("B", st, _model(networks=2), ADDR)
    assert "saddr" not in ruleset("A", st, _model(networks=2), ADDR)
    st.links_down.add(("C", 1))
    rules_c = ruleset("C", st, _model(networks=2), ADDR)
    assert 'iifname "eth1" drop' in rules_c and 'oifname "eth1" drop' in rules_c
    # the table is replaced whole, in one transaction
    assert rules_c.startswith("table inet rclive\ndelete table inet rclive\n")


def test_rules_of_losses() -> None:
    model = _model(
        networks=2,
        loss=0.1,
        loss_per_network=[0.0, 0.25],
        links=[{"from": "B", "to": "A", "loss": 0.5}],
    )
    rules = ruleset("A", NetState(), model, ADDR)
    assert "ip saddr { 10.9.0.2, 10.9.1.2 } numgen random mod 1000000 < 500000 drop" in rules
    assert "ip saddr { 10.9.0.3, 10.9.1.3 } numgen random mod 1000000 < 100000 drop" in rules
    assert 'iifname "eth1" numgen random mod 1000000 < 250000 drop' in rules
    assert 'iifname "eth0" numgen' not in rules


def test_a_certain_loss_drops_without_a_draw() -> None:
    """nftables' numgen draws below its modulus: a loss of 1 is a plain drop."""
    model = _model(links=[{"from": "B", "to": "A", "loss": 1.0}])
    assert "ip saddr { 10.9.0.2, 10.9.1.2 } drop\n" in ruleset("A", NetState(), model, ADDR)


def test_rules_of_duplication() -> None:
    """Duplication is accepted and becomes the switch's netdev chains: one a sender's
    port, a copy for each receiver out of the receiver's port; a link's own overrides the
    network's."""
    _check({"network": {"duplication": 0.1, "links": [{"from": "A", "to": "B", "duplication": 1}]}})
    model = _model(
        networks=2, duplication=0.2, links=[{"from": "A", "to": "B", "duplication": 1.0}]
    )
    ports = {n: [f"p{k}n0", f"p{k}n1"] for k, n in enumerate("ABC", start=1)}
    rules = switch_ruleset(model, ADDR, ports)
    assert rules is not None and rules.startswith("table netdev rcdup {\n")
    assert 'type filter hook ingress device "p1n1" priority 0; policy accept;' in rules
    assert 'ip daddr 10.9.1.2 dup to "p2n1"\n' in rules  # A -> B: always
    assert 'ip daddr 10.9.0.3 numgen random mod 1000000 < 200000 dup to "p3n0"' in rules
    assert 'ip daddr 10.9.0.1 dup to "p1n0"' not in rules  # nothing to itself
    assert switch_ruleset(_model(networks=2), ADDR, ports) is None


def test_the_bundled_scenarios_a_live_run_refuses_say_why() -> None:
    """Every bundled scenario either passes the check or is refused in one line."""
    from ringcast.sim import load_scenario

    accepted = 0
    for path in sorted(Path("scenarios").rglob("*.toml")):
        try:
            check_live(load_scenario(path), real_latency=True, netem=False)
            accepted += 1
        except LiveError as e:
            assert str(e).startswith(path.name) and "\n" not in str(e)
    assert accepted >= 40
