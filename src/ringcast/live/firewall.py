"""The live nemesis's network faults as nftables rules, one table in each node's
namespace.

The state of the network a scenario has made so far (:class:`NetState`: the partition's
components, the one-way cuts, the links down, the losses) becomes, for each node, one
``inet rclive`` table replaced whole in one ``nft -f`` transaction, so a fault never
shows half applied at a node. Every rule acts where the simulator decides a message's
fate: at the receiver's input for what comes from a given sender (partitions, cuts,
loss on a link, a network's loss) and at both ends for a link that is down.

Loss is nftables' ``numgen random``, drawn by the kernel a packet at a time: the same
probability as the scenario's, not the same packets as the simulator's seeded draw.

Duplication (:func:`switch_ruleset`) happens in the switch namespace instead, where a
sender's frames enter the bridge: a ``netdev`` ingress chain on the sender's bridge port
copies a frame for a receiver, with the scenario's probability, straight out of the
receiver's port (nftables' ``dup to``), beside the original the bridge forwards. Both
copies then meet the receiver's own rules, so a partition or a loss treats them as the
simulator treats its two copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ringcast.sim.scenario import NetworkModel

TABLE = "rclive"
SCALE = 1_000_000
"""Loss probabilities are applied in millionths."""


@dataclass
class NetState:
    """What the scenario's network faults have done so far."""

    component: dict[str, int] = field(default_factory=dict)
    """A node's partition component (0: in no listed group, or no partition)."""
    cuts: set[tuple[str, str]] = field(default_factory=set)
    """One-way cuts ``(src, dst)``: what ``src`` sends ``dst`` is lost."""
    links_down: set[tuple[str, int]] = field(default_factory=set)

    def partition(self, groups: Sequence[Sequence[str]], nodes: Sequence[str]) -> None:
        self.component = dict.fromkeys(nodes, 0)
        for k, g in enumerate(groups, start=1):
            for n in g:
                self.component[n] = k

    def heal(self) -> None:
        self.component.clear()
        self.cuts.clear()

    def blocked(self, src: str, dst: str) -> bool:
        """Whether nothing from ``src`` reaches ``dst`` (partition or cut)."""
        if self.component.get(src, 0) != self.component.get(dst, 0):
            return True
        return (src, dst) in self.cuts


def _odds(p: float) -> int:
    return round(p * SCALE)


def _chance(p: float, verdict: str) -> str:
    """``verdict`` with probability ``p`` (always when ``p`` rounds to one)."""
    odds = _odds(p)
    return verdict if odds >= SCALE else f"numgen random mod {SCALE} < {odds} {verdict}"


def ruleset(
    node: str,
    state: NetState,
    model: NetworkModel,
    addresses: Mapping[str, Sequence[str]],
) -> str:
    """The ``nft -f`` text that makes ``node``'s namespace match ``state`` and the
    scenario's losses; ``addresses[n][k]`` is node n's address on network k."""
    inp: list[str] = []
    out: list[str] = []
    for n, k in sorted(state.links_down):
        if n == node:
            inp.append(f'iifname "eth{k}" drop')
            out.append(f'oifname "eth{k}" drop')
    others = [n for n in addresses if n != node]
    silent = [a for n in others if state.blocked(n, node) for a in addresses[n]]
    if silent:
        inp.append(f"ip saddr {{ {', '.join(silent)} }} drop")
    for n in others:
        loss = model.loss
        for rule in model.links:
            if rule.src == n and rule.dst == node and rule.match is None and rule.loss is not None:
                loss = rule.loss
        if _odds(loss) > 0:
            saddrs = ", ".join(addresses[n])
            inp.append(f"ip saddr {{ {saddrs} }} {_chance(loss, 'drop')}")
    for k, p in enumerate(model.loss_per_network):
        if _odds(p) > 0:
            inp.append(f'iifname "eth{k}" {_chance(p, "drop")}')
    body = [f"table inet {TABLE}", f"delete table inet {TABLE}", f"table inet {TABLE} {{"]
    for name, hook, rules in (("input", "input", inp), ("output", "output", out)):
        body.append(f"  chain {name} {{")
        body.append(f"    type filter hook {hook} priority 0; policy accept;")
        body += [f"    {r}" for r in rules]
        body.append("  }")
    body.append("}")
    return "\n".join(body) + "\n"


DUP_TABLE = "rcdup"


def duplication(model: NetworkModel, src: str, dst: str) -> float:
    """The scenario's duplication probability from ``src`` to ``dst`` (a link's own, or
    the network's)."""
    dup = model.duplication
    for rule in model.links:
        same = rule.src == src and rule.dst == dst and rule.match is None
        if same and rule.duplication is not None:
            dup = rule.duplication
    return dup


def switch_ruleset(
    model: NetworkModel,
    addresses: Mapping[str, Sequence[str]],
    ports: Mapping[str, Sequence[str]],
) -> str | None:
    """The switch namespace's ``nft -f`` text duplicating frames as ``model`` asks, or
    None when it asks for none. ``addresses[n][k]`` is node n's address on network k,
    ``ports[n][k]`` its port on bridge k."""
    chains: list[str] = []
    for src, src_ports in ports.items():
        for k, port in enumerate(src_ports):
            rules = []
            for dst in ports:
                p = duplication(model, src, dst) if dst != src else 0.0
                if _odds(p) > 0:
                    verdict = f'dup to "{ports[dst][k]}"'
                    rules.append(f"ip daddr {addresses[dst][k]} {_chance(p, verdict)}")
            if rules:
                chains.append(f"  chain {port} {{")
                chains.append(
                    f'    type filter hook ingress device "{port}" priority 0; policy accept;'
                )
                chains += [f"    {r}" for r in rules]
                chains.append("  }")
    if not chains:
        return None
    return "\n".join([f"table netdev {DUP_TABLE} {{", *chains, "}"]) + "\n"
