"""The nemesis's nftables loaders: in-process threads in each namespace (libnftables)
and the ``nft`` process fallback load the same rules, where they are asked to."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from ringcast.live import nft
from ringcast.live.firewall import NetState, ruleset
from ringcast.live.netns import lab
from ringcast.sim.scenario import NetworkModel

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
