"""Network-namespace labs: one namespace a node, on one bridge a network.

A lab is one "switch" namespace holding one bridge a network (``br<net>``) and one
namespace a host with a veth pair into each bridge: the host's end is ``eth<net>``
(address ``<subnet>.<k>``, host k counted from 1), the switch's end is the bridge port
``p<k>n<net>``. Nothing is added to the machine's own network namespace, and every
namespace made is deleted when the lab's ``with`` block ends (deleting a namespace
deletes its links, bridges and nftables rules with it).

Used by ``ringcast live`` (:mod:`ringcast.live.driver`) and by the real-network tests
and benches. A lab that cannot be built raises :class:`NetnsUnavailable`.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

IP = shutil.which("ip") or "ip"
NFT = shutil.which("nft") or "nft"


class NetnsUnavailable(RuntimeError):
    """This machine will not let us build the lab (or its nftables rule)."""


def ip(*args: str) -> None:
    """Run ``ip`` with ``args``; raise on failure."""
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


def ringcast_in(ns: str) -> list[str]:
    """The ``ringcast`` command inside namespace ``ns``."""
    return [IP, "netns", "exec", ns, sys.executable, "-m", "ringcast.cli.main"]


@dataclass(frozen=True)
class Lab:
    """A built lab: the switch namespace and ``{node: netns}`` of the hosts."""

    switch: str
    hosts: dict[str, str]
    subnets: tuple[str, ...]

    def address(self, node: str, network: int = 0) -> str:
        """The node's address on ``network``."""
        return f"{self.subnets[network]}.{list(self.hosts).index(node) + 1}"

    def port(self, node: str, network: int = 0) -> str:
        """The switch's end of the node's veth pair on ``network`` (a port of its bridge)."""
        return f"p{list(self.hosts).index(node) + 1}n{network}"

    def link(self, node: str, network: int, state: str) -> None:
        """``ip link set eth<network> up|down`` in the node's namespace."""
        ip("-n", self.hosts[node], "link", "set", f"eth{network}", state)

    def lossy(self, network: int, percent: int | None) -> None:
        """Drop ``percent``% of the IPv4 frames entering bridge ``network``; None: stop.
        (An nftables rule in the switch namespace: this kernel has no netem qdisc.)"""
        if percent is None:
            cmd = [IP, "netns", "exec", self.switch, NFT, "delete", "table", "bridge", "rcloss"]
            subprocess.run(cmd, check=True, capture_output=True, timeout=10)
            return
        ports = ", ".join(f'"p{k}n{network}"' for k in range(1, len(self.hosts) + 1))
        rules = (
            "table bridge rcloss {\n chain lossy {\n"
            "  type filter hook forward priority 0; policy accept;\n"
            f"  iifname {{ {ports} }} ether type ip numgen random mod 100 < {percent} drop\n"
            " }\n}\n"
        )
        try:
            subprocess.run(
                [IP, "netns", "exec", self.switch, NFT, "-f", "-"],
                input=rules.encode(),
                check=True,
                capture_output=True,
                timeout=10,
            )
        except (OSError, subprocess.CalledProcessError) as e:
            why = e.stderr.decode().strip() if isinstance(e, subprocess.CalledProcessError) else e
            raise NetnsUnavailable(f"cannot add an nftables drop rule here: {why}") from e


@contextlib.contextmanager
def lab(nodes: Sequence[str], subnets: Sequence[str], prefix: str = "rc") -> Iterator[Lab]:
    """Build a lab of ``nodes`` on one bridge a subnet (``"10.1.2"`` for 10.1.2.0/24);
    delete its namespaces at the end. ``prefix`` starts the namespaces' names."""
    tag = uuid.uuid4().hex[:6]
    sw = f"{prefix}sw-{tag}"
    hosts = {n: f"{prefix}{n}-{tag}" for n in nodes}
    made: list[str] = []
    try:
        try:
            ip("netns", "add", sw)
        except subprocess.CalledProcessError as e:
            raise NetnsUnavailable(
                f"cannot create network namespaces here: {e.stderr.decode().strip()}"
            ) from e
        made.append(sw)
        for net in range(len(subnets)):
            ip("-n", sw, "link", "add", f"br{net}", "type", "bridge")
            ip("-n", sw, "link", "set", f"br{net}", "up")
        for k, ns in enumerate(hosts.values(), start=1):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
            for net, subnet in enumerate(subnets):
                peer = f"p{k}n{net}"
                eth = f"eth{net}"
                ip("-n", ns, "link", "add", eth, "type", "veth", "peer", "name", peer, "netns", sw)
                ip("-n", sw, "link", "set", peer, "master", f"br{net}")
                ip("-n", sw, "link", "set", peer, "up")
                ip("-n", ns, "addr", "add", f"{subnet}.{k}/24", "dev", eth)
                ip("-n", ns, "link", "set", eth, "up")
        yield Lab(sw, hosts, tuple(subnets))
    finally:
        for ns in reversed(made):
            subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=10)


def apply_nft(rulesets: dict[str, str], clock: Callable[[], int]) -> dict[str, int]:
    """Load each namespace's ruleset (``{netns: nft -f text}``, each applied as one
    transaction), all at once; return ``clock()`` read as each one's ``nft`` returned
    (when its rules hold). Raise :class:`NetnsUnavailable` naming nft's complaint."""
    nft = shutil.which("nft") or NFT
    procs = {}
    try:
        for ns, text in rulesets.items():
            p = subprocess.Popen(
                [IP, "netns", "exec", ns, nft, "-f", "-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert p.stdin is not None
            p.stdin.write(text.encode())
            p.stdin.close()
            procs[ns] = p
    except OSError as e:
        raise NetnsUnavailable(f"cannot run nft: {e}") from e
    done = {}
    failed = None
    for ns, p in procs.items():
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        done[ns] = clock()
        assert p.stderr is not None
        err = p.stderr.read().decode().strip()
        p.stderr.close()
        if p.returncode != 0 and failed is None:
            failed = f"nft in {ns}: {err or f'exit {p.returncode}'}"
    if failed is not None:
        raise NetnsUnavailable(failed)
    return done
